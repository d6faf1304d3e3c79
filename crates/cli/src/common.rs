//! What the subcommands share: the exit codes, the embedded example scenario, printing a
//! failure, reading a flag's duration, the binary's own path and the "wrote" line.

use ackshape_core::units;
use ackshape_live::gateway::GatewayError;
use std::process::ExitCode;
use std::time::Duration;

/// The scenario `ackshape run` uses when given none.
pub(crate) const DEFAULT_SCENARIO: &str = include_str!("../../../experiments/examples/dumbbell.toml");

/// The path of the running `ackshape`, for the commands it prints (`testbed up`): a hand-run
/// command then works whether or not `ackshape` is on PATH. Quoted for a shell if it needs it.
pub(crate) fn self_path() -> String {
    let p = std::env::current_exe().map(|p| p.display().to_string()).unwrap_or_else(|_| "ackshape".into());
    if p.chars().all(|c| c.is_ascii_alphanumeric() || "/._-+".contains(c)) {
        p
    } else {
        format!("'{}'", p.replace('\'', r"'\''"))
    }
}

/// A `--seed` value: a whole number from 0 to 2^64 − 1. (A negative one would otherwise be taken
/// for a flag by the argument parser, with a misleading tip.)
pub(crate) fn parse_seed(s: &str) -> Result<u64, String> {
    s.trim().parse::<u64>().map_err(|_| format!("expected a seed: a whole number from 0 to {}, got {s:?}", u64::MAX))
}

/// Exit code for a failure while running (an output that cannot be written, a live flow that
/// failed, a claim that does not hold under `reproduce --strict`).
pub(crate) const RUNTIME: u8 = 1;
/// Exit code for bad input (scenario, policy, flags).
pub(crate) const BAD_INPUT: u8 = 2;
/// Exit code when what a command needs is not on this machine (root, an interface, tools, the
/// Python package).
pub(crate) const CANNOT_RUN: u8 = 3;

/// "wrote DIR: a, b, c" for the files a run wrote into `out`.
pub(crate) fn wrote_line(out: &std::path::Path, files: &[std::path::PathBuf]) -> String {
    let names: Vec<String> = files.iter().map(|f| f.strip_prefix(out).unwrap_or(f).display().to_string()).collect();
    format!("wrote {}: {}", out.display(), names.join(", "))
}

/// Print `error: MSG` and return the exit code.
pub(crate) fn fail(code: u8, msg: impl std::fmt::Display) -> ExitCode {
    eprintln!("error: {msg}");
    ExitCode::from(code)
}

/// A duration flag (`--spin 200us`), the flag named in the error.
pub(crate) fn dur(flag: &str, s: &str) -> Result<Duration, String> {
    units::parse_duration(s).map(|d| Duration::from_nanos(d.0)).map_err(|e| format!("{flag}: {e}"))
}

/// The exit code of a live box that could not start or stopped with an error: bad input for what
/// the command line or the policy file got wrong, cannot-run-here for what this machine lacks (root,
/// the interface, offloads turned off on it), runtime for the rest.
pub(crate) fn box_exit_code(e: &GatewayError) -> u8 {
    match e {
        GatewayError::Policy(_) | GatewayError::SamePort(_) => BAD_INPUT,
        GatewayError::NoInterface { .. } | GatewayError::Offloads { .. } => CANNOT_RUN,
        GatewayError::OffloadCheck { source, .. } | GatewayError::Io(source) => io_exit_code(source),
    }
}

/// An I/O error of a live box: no permission (not root: an AF_PACKET socket needs CAP_NET_RAW) or
/// no such device means it cannot run here; anything else is a runtime failure.
pub(crate) fn io_exit_code(e: &std::io::Error) -> u8 {
    let no_device = matches!(e.raw_os_error(), Some(libc::ENODEV | libc::ENXIO | libc::EPERM | libc::EACCES));
    if e.kind() == std::io::ErrorKind::PermissionDenied || no_device {
        CANNOT_RUN
    } else {
        RUNTIME
    }
}
