//! SIGHUP/SIGINT/SIGTERM reach the engine's control flags (own test binary: handlers are
//! process-wide).

use ackshape_live::engine::Control;
use ackshape_live::gateway::install_signal_handlers;
use nix::sys::signal::{raise, Signal};
use std::sync::atomic::Ordering;

#[test]
fn signals_set_reload_and_stop_flags() {
    let ctl = Control::new();
    install_signal_handlers(&ctl).unwrap();
    raise(Signal::SIGHUP).unwrap();
    assert!(ctl.reload.load(Ordering::SeqCst));
    assert!(!ctl.stop.load(Ordering::SeqCst));
    raise(Signal::SIGTERM).unwrap();
    assert!(ctl.stop.load(Ordering::SeqCst));
    ctl.stop.store(false, Ordering::SeqCst);
    raise(Signal::SIGINT).unwrap();
    assert!(ctl.stop.load(Ordering::SeqCst));
}
