// A Go program whose main goroutine blocks in a system call (the OS thread
// with it), built as Debian builds Go programs and stripped of every symbol
// (-ldflags=-s -w): its names are only in .gopclntab. Prints its pid first,
// then its own measure of its sleeps.
package main

import (
	"fmt"
	"os"
	"syscall"
	"time"
)

//go:noinline
func sleepOnce10ms() {
	ts := syscall.Timespec{Nsec: 10_000_000}
	syscall.Nanosleep(&ts, nil)
}

//go:noinline
func sleepLoop(n int) time.Duration {
	start := time.Now()
	for i := 0; i < n; i++ {
		sleepOnce10ms()
	}
	return time.Since(start)
}

func main() {
	fmt.Printf("{\"pid\": %d}\n", os.Getpid())
	took := sleepLoop(150)
	fmt.Printf("{\"pid\": %d, \"nanosleep_calls\": 150, \"nanosleep_ns\": %d}\n", os.Getpid(), took.Nanoseconds())
}
