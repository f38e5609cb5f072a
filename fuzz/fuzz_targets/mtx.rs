#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| parsim_fuzz::run("mtx", data));
