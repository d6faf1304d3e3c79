#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| ackshape_fuzz::targets::scenario_text(data));
