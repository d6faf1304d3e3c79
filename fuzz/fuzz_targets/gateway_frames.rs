#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| ackshape_fuzz::targets::gateway_frames(data));
