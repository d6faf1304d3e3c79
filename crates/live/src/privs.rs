//! Least privilege for the live boxes (gateway, wanem, tap): once their sockets are open they
//! need CAP_NET_RAW (the AF_PACKET sockets) and, for negative nice values, SCHED_FIFO or an
//! EEVDF slice, CAP_SYS_NICE; every other capability is dropped from the effective, permitted,
//! inheritable, ambient and bounding sets, optionally after switching to an unprivileged user.
//! Files the boxes write (pcap captures, stats JSON) are created with [`DEFAULT_FILE_MODE`]
//! unless told otherwise.

use caps::{CapSet, Capability, CapsHashSet};
use std::io;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// Mode of the files the boxes create (they hold full packets and flow tuples).
pub const DEFAULT_FILE_MODE: u32 = 0o600;

/// What to drop after start-up.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PrivDrop {
    /// Switch to this user (name or numeric uid) and its primary group, keeping only the
    /// capabilities the box needs.
    pub user: Option<String>,
}

/// The capabilities a box keeps: CAP_NET_RAW, and CAP_SYS_NICE when its scheduling asks for a
/// negative nice value, an EEVDF slice or SCHED_FIFO.
pub fn needed_caps(nice: i32, fair_slice: bool, realtime: bool) -> Vec<Capability> {
    let mut v = vec![Capability::CAP_NET_RAW];
    if nice < 0 || fair_slice || realtime {
        v.push(Capability::CAP_SYS_NICE);
    }
    v
}

fn err(what: &str, e: impl std::fmt::Display) -> io::Error {
    io::Error::new(io::ErrorKind::PermissionDenied, format!("dropping privileges: {what}: {e}"))
}

/// The uid and gid of `user` (a name or a number).
pub fn resolve_user(user: &str) -> io::Result<(u32, u32)> {
    let u = match user.parse::<u32>() {
        Ok(uid) => nix::unistd::User::from_uid(nix::unistd::Uid::from_raw(uid)),
        Err(_) => nix::unistd::User::from_name(user),
    }
    .map_err(|e| err(&format!("looking up user {user:?}"), e))?;
    match u {
        Some(u) => Ok((u.uid.as_raw(), u.gid.as_raw())),
        // A numeric uid without a passwd entry: its own number as the group.
        None => match user.parse::<u32>() {
            Ok(uid) => Ok((uid, uid)),
            Err(_) => Err(err("--user", format!("no user named {user:?}"))),
        },
    }
}

/// Drop to `keep` (and to `user`, if given). Capabilities are per thread: call this from the
/// thread that will run the box before it starts other threads (the metrics endpoint, the
/// policy loader), which then inherit the reduced sets. Switching user (setresuid) applies to
/// every thread of the process. Without CAP_SETPCAP (not running as root) the bounding set is
/// left as it is. Returns the effective set after the drop.
pub fn drop_privileges(keep: &[Capability], user: Option<(u32, u32)>) -> io::Result<CapsHashSet> {
    let keep: CapsHashSet = keep.iter().copied().collect();
    let have = caps::read(None, CapSet::Permitted).map_err(|e| err("reading capabilities", e))?;
    let keep: CapsHashSet = keep.intersection(&have).copied().collect();
    if have.contains(&Capability::CAP_SETPCAP) {
        for c in caps::all() {
            if !keep.contains(&c) {
                caps::drop(None, CapSet::Bounding, c).map_err(|e| err("bounding set", e))?;
            }
        }
    }
    let _ = caps::clear(None, CapSet::Ambient);
    if let Some((uid, gid)) = user {
        // Keep the permitted set across the uid change; the effective set is set again below.
        caps::securebits::set_keepcaps(true).map_err(|e| err("PR_SET_KEEPCAPS", e))?;
        let g = nix::unistd::Gid::from_raw(gid);
        nix::unistd::setgroups(&[g]).map_err(|e| err("setgroups", e))?;
        nix::unistd::setresgid(g, g, g).map_err(|e| err("setresgid", e))?;
        let u = nix::unistd::Uid::from_raw(uid);
        nix::unistd::setresuid(u, u, u).map_err(|e| err("setresuid", e))?;
        caps::securebits::set_keepcaps(false).map_err(|e| err("PR_SET_KEEPCAPS", e))?;
    }
    caps::set(None, CapSet::Inheritable, &CapsHashSet::new()).map_err(|e| err("inheritable set", e))?;
    // Effective first: it must stay within the permitted set.
    caps::set(None, CapSet::Effective, &keep).map_err(|e| err("effective set", e))?;
    caps::set(None, CapSet::Permitted, &keep).map_err(|e| err("permitted set", e))?;
    caps::read(None, CapSet::Effective).map_err(|e| err("reading capabilities", e))
}

/// Create (truncate) `path` for writing with `mode`; an existing file gets `mode` too.
pub fn create_file(path: &Path, mode: u32) -> io::Result<std::fs::File> {
    let f = std::fs::OpenOptions::new().write(true).create(true).truncate(true).mode(mode).open(path)?;
    f.set_permissions(std::os::unix::fs::PermissionsExt::from_mode(mode))?;
    Ok(f)
}

/// Open `path` for appending, creating it with `mode` (an existing file gets `mode` too).
pub fn append_file(path: &Path, mode: u32) -> io::Result<std::fs::File> {
    let f = std::fs::OpenOptions::new().append(true).create(true).mode(mode).open(path)?;
    f.set_permissions(std::os::unix::fs::PermissionsExt::from_mode(mode))?;
    Ok(f)
}

/// The file mode for a umask (`0o077` → `0o600`).
pub fn mode_for_umask(umask: u32) -> u32 {
    0o666 & !umask
}

/// The effective capability mask (`CapEff` of `/proc/self/task/TID/status`) of thread `tid`
/// (None: the calling thread).
pub fn cap_eff(tid: Option<i32>) -> io::Result<u64> {
    let path = match tid {
        Some(t) => format!("/proc/self/task/{t}/status"),
        None => "/proc/thread-self/status".into(),
    };
    let s = std::fs::read_to_string(path)?;
    s.lines()
        .find_map(|l| l.strip_prefix("CapEff:"))
        .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
        .ok_or_else(|| io::Error::other("no CapEff line"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_are_created_0600_or_with_the_umask_mode() {
        use std::os::unix::fs::PermissionsExt;
        let dir = std::env::temp_dir().join(format!("acks-privs-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("a");
        std::fs::write(&p, "old").unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644)).unwrap();
        drop(create_file(&p, DEFAULT_FILE_MODE).unwrap());
        assert_eq!(std::fs::metadata(&p).unwrap().permissions().mode() & 0o777, 0o600, "existing file tightened");
        drop(append_file(&dir.join("b"), mode_for_umask(0o027)).unwrap());
        assert_eq!(std::fs::metadata(dir.join("b")).unwrap().permissions().mode() & 0o777, 0o640);
        assert_eq!(mode_for_umask(0o077), 0o600);
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// In a thread of its own (capabilities are per thread): the effective set afterwards is
    /// CAP_NET_RAW alone, or with CAP_SYS_NICE when scheduling needs it.
    #[test]
    fn a_thread_drops_to_net_raw() {
        if crate::sys::euid() != 0 {
            eprintln!("SKIP (counted as a pass only because it cannot run here): needs root");
            return;
        }
        for (nice, want) in [(0, 1u64 << 13), (-20, (1u64 << 13) | (1u64 << 23))] {
            let eff = std::thread::spawn(move || {
                drop_privileges(&needed_caps(nice, false, false), None).unwrap();
                cap_eff(None).unwrap()
            })
            .join()
            .unwrap();
            assert_eq!(eff, want, "CapEff {eff:#x} (nice {nice})");
        }
        assert_ne!(cap_eff(None).unwrap(), 1 << 13, "the test thread keeps its own");
    }
}
