//! `ACKSHAPE_LIVE=require` turns a live test's skip into a failure: shown by running this test binary
//! again as an unprivileged user (uid/gid 65534, "nobody"), where no live test can run.
//!
//! As root, `require_makes_a_non_root_live_run_fail` copies this binary to a directory any user can read,
//! runs only `live_probe` in it as uid 65534 twice — once with `ACKSHAPE_LIVE=require` (must exit non-zero
//! and name the reason), once without (must pass and print `SKIPPED`) — so a suite run by a user who cannot
//! run the live tests cannot go green under CI's setting.

use ackshape_live::testbed;
use std::os::unix::process::CommandExt;
use std::process::{Command, Output};

/// The live test the non-root runs execute: it skips (or, with `ACKSHAPE_LIVE=require`, fails) exactly as
/// every live test does when the machine cannot run them; as root it checks the preflight agrees.
#[test]
fn live_probe() {
    if testbed::skip_unless_live("live_probe") {
        return;
    }
    assert_eq!(testbed::preflight(), None);
}

/// Removes the copy of the binary even when an assertion fails.
struct TempDir(std::path::PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn run_probe_as_nobody(exe: &std::path::Path, require: bool) -> Output {
    let mut cmd = Command::new(exe);
    cmd.args(["--exact", "live_probe", "--nocapture", "--test-threads", "1"]);
    cmd.env_remove("ACKSHAPE_LIVE");
    if require {
        cmd.env("ACKSHAPE_LIVE", "require");
    }
    cmd.current_dir(exe.parent().expect("binary has a directory"));
    cmd.uid(65534).gid(65534); // std drops supplementary groups when root sets a uid
    cmd.output().expect("spawn the test binary as uid 65534")
}

#[test]
fn require_makes_a_non_root_live_run_fail() {
    // Switching to another user needs root; when this test cannot do that it is itself a skipped live test.
    if testbed::skip_unless_live("require_makes_a_non_root_live_run_fail") {
        return;
    }
    let dir = TempDir(std::env::temp_dir().join(format!("ackshape-require-{}", std::process::id())));
    std::fs::create_dir_all(&dir.0).expect("temp dir");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&dir.0, std::fs::Permissions::from_mode(0o755)).expect("chmod temp dir");
    let exe = dir.0.join("live_require");
    std::fs::copy(std::env::current_exe().expect("own path"), &exe).expect("copy the test binary");
    std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).expect("chmod test binary");

    let failed = run_probe_as_nobody(&exe, true);
    let text = format!("{}{}", String::from_utf8_lossy(&failed.stdout), String::from_utf8_lossy(&failed.stderr));
    println!("non-root, ACKSHAPE_LIVE=require: {} ({} bytes of output)", failed.status, text.len());
    assert!(!failed.status.success(), "a non-root live run with ACKSHAPE_LIVE=require passed:\n{text}");
    assert!(
        text.contains("live_probe cannot run here and ACKSHAPE_LIVE=require: not root"),
        "the failure does not name the reason:\n{text}"
    );

    let skipped = run_probe_as_nobody(&exe, false);
    let text = format!("{}{}", String::from_utf8_lossy(&skipped.stdout), String::from_utf8_lossy(&skipped.stderr));
    println!("non-root, no ACKSHAPE_LIVE: {}", skipped.status);
    assert!(skipped.status.success(), "without ACKSHAPE_LIVE a non-root skip should pass:\n{text}");
    assert!(text.contains("SKIPPED: live_probe: not root"), "the skip is not printed:\n{text}");
}
