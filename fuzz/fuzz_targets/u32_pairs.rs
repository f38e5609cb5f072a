#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| parsim_fuzz::run("u32_pairs", data));
