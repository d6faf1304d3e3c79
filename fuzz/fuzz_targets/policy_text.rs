#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| ackshape_fuzz::targets::policy_text(data));
