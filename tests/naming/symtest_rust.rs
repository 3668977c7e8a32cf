// SPDX-License-Identifier: GPL-2.0-only
// The symbolizer test program in Rust: a function whose mangled name (v0 or
// legacy) must come out as symtest_rust::wait_for_job.
use std::io::Read;

#[inline(never)]
pub fn wait_for_job(n: i32) -> i32 {
    // a volatile read: the call and the function stay (black_box is too new for Debian 12)
    unsafe { std::ptr::read_volatile(&n) + 1 }
}

fn main() {
    let f: fn(i32) -> i32 = wait_for_job;
    println!("pid {}", std::process::id());
    println!("CHECK leaf {:#x} symtest_rust::wait_for_job", f as usize);
    println!("ready");
    let mut buf = [0u8; 1];
    while std::io::stdin().read(&mut buf).map(|n| n > 0).unwrap_or(false) {}
    std::process::exit(if f(1) == 2 { 0 } else { 1 });
}
