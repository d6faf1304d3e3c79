#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| ackshape_fuzz::targets::spoof_flow(data));
