//! `ackshape validate --policy` / `--tap`: check a live policy offline, as the gateway (or tap)
//! loads it, with a summary of what it will do and warnings about what is valid but probably not
//! meant; and the same warnings for a scenario's gateway boxes.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

struct Dir(PathBuf);

impl Dir {
    fn new(case: &str) -> Dir {
        let d = std::env::temp_dir().join(format!("ackshape-vp-{}-{case}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        Dir(d)
    }
    fn file(&self, name: &str, text: &str) -> PathBuf {
        let p = self.0.join(name);
        std::fs::write(&p, text).unwrap();
        p
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        std::fs::remove_dir_all(&self.0).ok();
    }
}

fn validate(args: &[&str], file: &Path) -> (Option<i32>, String, String) {
    let out: Output =
        Command::new(env!("CARGO_BIN_EXE_ackshape")).arg("validate").args(args).arg(file).output().unwrap();
    let (o, e) = (String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned());
    eprintln!("ackshape validate {args:?} {} → {:?}\n{o}{e}", file.display(), out.status.code());
    (out.status.code(), o, e)
}

const OFFICE: &str = r#"
malformed = "drop"
default_class = "bulk"

[link]
outbound = "10Mbit/s"

[[class]]
name = "data"
rate = "9Mbit/s"

[[class]]
name = "web"
parent = "data"
rate = "6Mbit/s"
ceil = "9Mbit/s"
priority = 1
mechanism = { kind = "tcr" }

[[class]]
name = "bulk"
parent = "data"
rate = "3Mbit/s"
ceil = "9Mbit/s"
qdisc = { kind = "pfq-drr" }
mechanism = { kind = "postack", variant = "zero-timer" }

[[rule]]
class = "web"
proto = "tcp"
dport = [80, 443]
"#;

#[test]
fn a_good_policy_is_summarised_without_warnings() {
    let d = Dir::new("good");
    let f = d.file("office.toml", OFFICE);
    let (code, out, err) = validate(&["--policy"], &f);
    assert_eq!(code, Some(0));
    assert!(out.contains("office.toml: valid gateway policy"), "{out}");
    for s in [
        "link: outbound 10Mbit/s, inbound unlimited",
        "    web ",
        "tcr",
        "pfq-drr (pcdq 1pkt)  postack (variant = \"zero-timer\")",
        "rule[0]  outbound tcp dport 80,443  -> web",
        "no rule matches: class bulk (default_class)",
        "malformed drop",
    ] {
        assert!(out.contains(s), "missing {s:?} in\n{out}");
    }
    assert!(!err.contains("warning"), "{err}");
}

#[test]
fn a_valid_but_suspicious_policy_gets_warnings_naming_file_and_key() {
    let d = Dir::new("warn");
    let text = OFFICE
        .replace("default_class = \"bulk\"\n", "")
        .replace("[link]\n", "[link]\ninbound = \"50Mbit/s\"\n")
        .replace("qdisc = { kind = \"pfq-drr\" }\n", "");
    let f = d.file("warn.toml", &text);
    let (code, out, err) = validate(&["--policy"], &f);
    assert_eq!(code, Some(0), "warnings do not reject a policy");
    assert!(out.contains("passes unshaped (no default_class)"), "{out}");
    for key in ["class[2]`", "class[2].qdisc`", "link.inbound`"] {
        assert!(
            err.lines().any(|l| l.starts_with("warning:") && l.contains("warn.toml") && l.contains(key)),
            "no warning for {key} in\n{err}"
        );
    }
    assert!(err.contains("never carry traffic") && err.contains("pfq-drr") && err.contains("limits nothing"), "{err}");
}

#[test]
fn bad_policies_are_rejected_naming_file_and_key() {
    let d = Dir::new("bad");
    // The kinds a policy's qdisc takes are the library's list, not a copy of it.
    let kinds = ackshape_core::shape::qdisc_spec::POLICY_KINDS;
    let unknown = format!("expected a `kind` of {kinds}, got \"sfq\"");
    let bare = format!("(kinds: {kinds}), got 3");
    let cases: [(&str, String, &str, &str); 8] = [
        (
            "bare-mechanism",
            OFFICE.replace("mechanism = { kind = \"tcr\" }", "mechanism = \"tcr\""),
            "class[1].mechanism",
            "expected a table like `{ kind = \"tcr\" }`",
        ),
        (
            "unknown-qdisc",
            OFFICE.replace("qdisc = { kind = \"pfq-drr\" }", "qdisc = { kind = \"sfq\" }"),
            "class[2].qdisc",
            &unknown,
        ),
        ("bare-qdisc", OFFICE.replace("qdisc = { kind = \"pfq-drr\" }", "qdisc = 3"), "qdisc", &bare),
        (
            "ceil",
            OFFICE.replace("ceil = \"9Mbit/s\"\npriority = 1", "ceil = \"1Mbit/s\"\npriority = 1"),
            "class[1].ceil",
            "below rate",
        ),
        ("unit", OFFICE.replace("rate = \"6Mbit/s\"", "rate = \"6\""), "class[1].rate", "unit"),
        ("mechanism", OFFICE.replace("kind = \"tcr\"", "kind = \"magic\""), "class[1].mechanism.kind", "magic"),
        (
            "order",
            format!("{OFFICE}order = 1\n[[rule]]\nclass = \"bulk\"\nproto = \"tcp\"\ndport = 443\norder = 1\n"),
            "rule[1].order",
            "same packets",
        ),
        ("scenario-keys", "duration = \"10s\"\n".into(), "duration", "unknown"),
    ];
    for (case, text, key, says) in cases {
        let f = d.file(&format!("{case}.toml"), &text);
        let (code, _, err) = validate(&["--policy"], &f);
        assert_eq!(code, Some(2), "{case}");
        assert!(err.contains(&format!("{case}.toml")) && err.contains(key) && err.contains(says), "{case}: {err}");
    }
}

#[test]
fn tap_policies_validate_too() {
    let d = Dir::new("tap");
    let f = d.file(
        "tap.toml",
        "[[rule]]\nname = \"sub-42\"\nsrc = \"10.1.2.0/24\"\ntechnique = \"triple-ack\"\ntarget = \"5Mbit/s\"\n\
         [[rule]]\ndport = 6881\ntechnique = \"zero-window\"\nevery = 2\n",
    );
    let (code, out, _) = validate(&["--tap"], &f);
    assert_eq!(code, Some(0));
    assert!(out.contains("valid tap policy, 2 rule(s)"), "{out}");
    assert!(
        out.contains("sub-42: triple-ack, hold 5Mbit/s") && out.contains("rule-1: zero-window, every 2 ACKs"),
        "{out}"
    );
    let f = d.file("badtap.toml", "[[rule]]\ntechnique = \"quadruple-ack\"\n");
    let (code, _, err) = validate(&["--tap"], &f);
    assert_eq!(code, Some(2));
    assert!(err.contains("badtap.toml") && err.contains("rule[0].technique"), "{err}");
    // One kind at a time.
    let (code, _, err) = validate(&["--tap", "--policy"], &f);
    assert_eq!(code, Some(2), "{err}");
}

#[test]
fn a_scenarios_gateway_policy_gets_the_same_warnings() {
    let d = Dir::new("scenario");
    let scenario = |policy: &str| {
        format!(
            "duration = \"5s\"\n\
             [topology]\nkind = \"dumbbell\"\n\
             bottleneck = {{ rate = \"10Mbit/s\", delay = \"20ms\", queue = \"100pkt\" }}\n\
             access = {{ rate = \"100Mbit/s\", delay = \"1ms\" }}\n\
             [[flows]]\ncount = 1\n\
             [[middlebox]]\nnode = \"left\"\nwan = \"bottleneck\"\nkind = \"gateway\"\n{policy}\n"
        )
    };
    let unused = "class = [ { name = \"a\", rate = \"5Mbit/s\" }, { name = \"idle\", rate = \"1Mbit/s\" } ], rule = [ { class = \"a\" } ]";
    let f = d.file("inline.toml", &scenario(&format!("policy = {{ {unused} }}")));
    let (code, _, err) = validate(&[], &f);
    assert_eq!(code, Some(0));
    assert!(
        err.contains("warning: ") && err.contains("inline.toml") && err.contains("middlebox[0].policy.class[1]`"),
        "{err}"
    );
    // From a policy_file: the warning names that file and its own key.
    d.file("gw.toml", "[[class]]\nname = \"a\"\nrate = \"5Mbit/s\"\n[[class]]\nname = \"idle\"\nrate = \"1Mbit/s\"\n[[rule]]\nclass = \"a\"\n");
    let f = d.file("from-file.toml", &scenario("policy_file = \"gw.toml\""));
    let (code, _, err) = validate(&[], &f);
    assert_eq!(code, Some(0));
    assert!(err.contains("gw.toml: key `class[1]`"), "{err}");
    // And the live gateway's own check of that file says the same.
    let (code, _, err2) = validate(&["--policy"], &d.0.join("gw.toml"));
    assert_eq!(code, Some(0));
    assert!(err2.contains("gw.toml: key `class[1]`"), "{err2}");
}
