// A Go program whose blocking path runs through calls the compiler inlines
// (outerInlined, middleInlined, innerInlined: small, no //go:noinline),
// built without symbols (-ldflags=-s -w) as go_sleeper is. Prints its pid
// first, then, once, the frames of its blocking call as Go itself names them
// (runtime.CallersFrames expands inlined calls), then its own measure of its
// sleeps.
package main

import (
	"encoding/json"
	"os"
	"runtime"
	"syscall"
	"time"
)

var (
	ts     = syscall.Timespec{Nsec: 10_000_000}
	frames []string
)

// block sleeps 10 ms; the first time, it notes its callers first.
//
//go:noinline
func block() {
	if frames == nil {
		pcs := make([]uintptr, 64)
		it := runtime.CallersFrames(pcs[:runtime.Callers(1, pcs)])
		for f, more := it.Next(); ; f, more = it.Next() {
			frames = append(frames, f.Function)
			if !more {
				break
			}
		}
	}
	syscall.Nanosleep(&ts, nil)
}

func innerInlined()  { block() }
func middleInlined() { innerInlined() }
func outerInlined()  { middleInlined() }

func main() {
	out := json.NewEncoder(os.Stdout)
	out.Encode(map[string]int{"pid": os.Getpid()})
	start := time.Now()
	for i := 0; i < 150; i++ {
		outerInlined()
	}
	out.Encode(map[string]interface{}{"pid": os.Getpid(), "nanosleep_calls": 150,
		"nanosleep_ns": time.Since(start).Nanoseconds(), "frames": frames})
}
