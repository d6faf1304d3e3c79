//! The bodies of the fuzz targets (fuzz_targets/*.rs call these).

use crate::{advance, Event, OutputCheck, Timed, World, GATEWAY_POLICIES, TAP_POLICIES};
use ackshape_core::middlebox::{Dir, Emit, Middlebox};
use ackshape_core::shape::gateway::Gateway;
use ackshape_core::shape::tap::{Tap, TapSpec};
use ackshape_core::time::{Dur, Time};
use ackshape_format::policy_report::PolicyReport;
use ackshape_live::classify::{classify, FrameClass};
use ackshape_live::gateway::{PolicyPipeline, GATEWAY_OVERHEAD_BYTES, GATEWAY_SEED, RELOAD_GRACE};
use ackshape_live::mbpipe::{MbPipelineConfig, MiddleboxPipeline};
use ackshape_live::pipeline::{OutFrame, Pipeline, Verdict};
use ackshape_live::policy::{FrameAction, Policy};
use ackshape_live::stats::FlowTable;
use ackshape_live::tap::{on_mirrored_frame, on_tap_timeout, TapCounters};
use libfuzzer_sys::arbitrary::Unstructured;
use std::sync::OnceLock;

/// The gateway policies, parsed once.
pub fn gateway_policies() -> &'static [Policy] {
    static P: OnceLock<Vec<Policy>> = OnceLock::new();
    P.get_or_init(|| {
        GATEWAY_POLICIES
            .iter()
            .enumerate()
            .map(|(i, t)| Policy::from_toml(t, &format!("policy {i}")).unwrap_or_else(|e| panic!("{e}")))
            .collect()
    })
}

/// The tap policies, parsed once.
pub fn tap_policies() -> &'static [TapSpec] {
    static P: OnceLock<Vec<TapSpec>> = OnceLock::new();
    P.get_or_init(|| {
        TAP_POLICIES
            .iter()
            .enumerate()
            .map(|(i, t)| ackshape_format::tap::from_toml(t).unwrap_or_else(|e| panic!("tap policy {i}: {e:?}")))
            .collect()
    })
}

/// The pipeline under test: the one `ackshape gateway` builds for the policy, or the same box in
/// a pipeline with small bounds.
enum Pipe {
    Policy(PolicyPipeline),
    Small(MiddleboxPipeline),
}

/// The pipeline with the checks on what it emits.
struct Gw {
    pipe: Pipe,
    out: Vec<OutFrame>,
    check: OutputCheck,
    fires: u64,
}

impl Gw {
    fn drain(&mut self, now: Time) {
        self.out.clear();
        self.pipe.p().take_output(&mut self.out);
        for o in self.out.iter() {
            self.check.check(&o.frame, "gateway");
            if let Some(due) = o.due {
                assert!(due <= now, "a frame released by a timer due {due:?} left at {now:?}, early");
            }
        }
    }
}

impl Timed for Gw {
    fn poll(&self) -> Option<Time> {
        match &self.pipe {
            Pipe::Policy(p) => p.poll_timeout(),
            Pipe::Small(p) => p.poll_timeout(),
        }
    }
    fn fire(&mut self, now: Time) {
        self.fires += 1;
        self.pipe.p().on_timeout(now);
        self.drain(now);
    }
}

impl Pipe {
    fn p(&mut self) -> &mut dyn Pipeline {
        match self {
            Pipe::Policy(p) => p,
            Pipe::Small(p) => p,
        }
    }
    fn mb(&self) -> Option<&MiddleboxPipeline> {
        match self {
            Pipe::Policy(p) => p.middlebox(),
            Pipe::Small(p) => Some(p),
        }
    }
}

/// `ACKSHAPE_FUZZ_TRACE=1`: print each event as it is run (to read a crash input).
fn tracing() -> bool {
    static T: OnceLock<bool> = OnceLock::new();
    *T.get_or_init(|| std::env::var_os("ACKSHAPE_FUZZ_TRACE").is_some())
}

fn trace(now: Time, ev: &Event) {
    if !tracing() {
        return;
    }
    match ev {
        Event::Frame { dt, a_to_b, frame, csum_not_ready } => {
            let what = match classify(frame) {
                FrameClass::Tcp(p) | FrameClass::NonTcp { parsed: p, .. } => format!("{:?}", p.packet),
                c => format!("{c:?}"),
            };
            eprintln!(
                "{now:?} +{dt:?} {} csum_not_ready={csum_not_ready} {what}",
                if *a_to_b { "A->B" } else { "B->A" }
            );
        }
        e => eprintln!("{now:?} {e:?}"),
    }
}

fn num(v: &serde_json::Value) -> u64 {
    v.as_u64().unwrap_or(0)
}

/// The bounds of the box's own state, read from its stats: tracked flows within the policy's
/// `max_flows`, kept SYNs within them, and no mechanism holding state for more flows than the
/// gateway tracks.
fn check_box_stats(st: &serde_json::Value, max_flows: usize) {
    let f = &st["flows"];
    let tracked = num(&f["tracked"]);
    assert!(tracked <= max_flows as u64, "gateway tracks {tracked} flows, max_flows {max_flows}: {f}");
    assert!(num(&f["opening_syns_kept"]) <= tracked, "{f}");
    let mut mech_flows = 0;
    if let Some(classes) = st["classes"].as_object() {
        for (name, c) in classes {
            if let Some(ms) = c["mechanism_stats"].as_object() {
                for (dir, m) in ms {
                    let n = m.get("flows_live").or_else(|| m.get("flows")).map_or(0, num);
                    mech_flows += n;
                    if let (Some(h), Some(cap)) = (m.get("acks_held"), m.get("flows_live")) {
                        // PostACK: at most max_held_per_flow (default 1024) per flow with state.
                        assert!(num(h) <= 1024 * num(cap), "class {name} {dir}: {m}");
                    }
                }
            }
        }
    }
    assert!(mech_flows <= tracked, "mechanisms hold state for {mech_flows} flows, the gateway tracks {tracked}: {st}");
}

/// After the final drain (no traffic for minutes, every flow evicted): nothing is left inside
/// the box — no queued packet, no held ACK (it would never leave).
fn check_drained(st: &serde_json::Value) {
    if let Some(classes) = st["classes"].as_object() {
        for (name, c) in classes {
            if let Some(q) = c["qdisc"].as_object() {
                for (dir, q) in q {
                    assert_eq!(num(&q["queue_pkts"]), 0, "class {name} {dir}: packets stranded in the queue: {st}");
                }
            }
            if let Some(ms) = c["mechanism_stats"].as_object() {
                for (dir, m) in ms {
                    assert_eq!(num(&m["acks_held"]), 0, "class {name} {dir}: ACKs stranded: {st}");
                }
            }
        }
    }
    if let Some(ph) = st["per_host"].as_object() {
        for (name, t) in ph {
            assert_eq!(num(&t["data_queue_pkts"]) + num(&t["acks_held"]), 0, "per-host {name}: stranded: {st}");
        }
    }
}

/// `gateway_frames`: see README.md.
pub fn gateway_frames(data: &[u8]) {
    let policies = gateway_policies();
    let mut u = Unstructured::new(data);
    let Ok(cfg_byte) = u.arbitrary::<u16>() else { return };
    let mut pi = (cfg_byte & 0xff) as usize % policies.len();
    let small = cfg_byte & 0x100 != 0;
    let mut cfg = MbPipelineConfig::default();
    if small {
        cfg = MbPipelineConfig {
            non_tcp_to_box: cfg_byte & 0x200 == 0,
            max_flows: 1 + ((cfg_byte >> 10) & 7) as usize,
            flow_idle_timeout_s: [0.05, 0.5, 5.0, 30.0][((cfg_byte >> 13) & 3) as usize],
            max_pending_bytes: [1_500, 4_000, 16_000, 200_000][((cfg_byte >> 13) & 3) as usize ^ 1],
            max_pending_age_s: if cfg_byte & 0x8000 != 0 { 0.2 } else { 10.0 },
        };
    }
    if tracing() {
        eprintln!("policy {pi}, small bounds: {small} {cfg:?}");
    }
    let new_box = |pi: usize| -> Box<dyn Middlebox + Send> {
        Box::new(Gateway::new(
            policies[pi].shaping.clone().expect("fuzz policies shape"),
            GATEWAY_OVERHEAD_BYTES,
            GATEWAY_SEED,
        ))
    };
    let pipe = if small {
        Pipe::Small(MiddleboxPipeline::with_config(new_box(pi), "gateway", cfg.clone()))
    } else {
        Pipe::Policy(PolicyPipeline::new(&policies[pi]))
    };
    // The engine's own flow table (stats), bounded by the policy's [flows].
    let mut table = FlowTable::new(policies[pi].flows.clone());
    // A reload that lowers max_flows keeps the flows the table has until they go idle.
    let mut max_table = policies[pi].flows.max_flows;
    // Bounds in force: the largest max_flows any config had (a lowered one lets kept flows stay).
    let mut max_pipe_flows = pipe.mb().map_or(0, |m| m.config().max_flows);
    let mut max_pending = pipe.mb().map_or(0, |m| m.config().max_pending_bytes);
    let mut g = Gw { pipe, out: Vec::new(), check: OutputCheck::default(), fires: 0 };
    let mut world = World::default();
    let mut now = Time(1_000_000_000);
    let mut events = 0usize;

    loop {
        let ev = match world.next_event(&mut u) {
            Ok(Some(e)) => e,
            _ => break,
        };
        events += 1;
        trace(now, &ev);
        match ev {
            Event::Frame { dt, a_to_b, mut frame, .. } => {
                let to = now + dt;
                advance(&mut now, to, Dur(0), &mut g);
                let dir = if a_to_b { Dir::AToB } else { Dir::BToA };
                let class = classify(&frame);
                let pol = &policies[pi];
                // The engine's policy step (crates/live/src/engine.rs `handle`).
                let action = match &class {
                    FrameClass::Tcp(_) => FrameAction::Forward,
                    FrameClass::NonTcp { .. } => pol.non_tcp,
                    FrameClass::NonIp { .. } => pol.non_ip,
                    FrameClass::Malformed(..) => pol.malformed,
                };
                if let Some(p) = class.packet() {
                    table.touch(now, dir, p, frame.len());
                    assert!(
                        table.len() <= max_table,
                        "engine flow table: {} flows, max_flows {max_table}",
                        table.len()
                    );
                }
                if action == FrameAction::Drop {
                    continue;
                }
                g.check.fed(&frame);
                let v = g.pipe.p().on_frame(now, dir, &mut frame, &class);
                assert!(matches!(v, Verdict::Forward | Verdict::Consumed), "{v:?}");
                g.drain(now);
            }
            Event::Advance { dt, late } => {
                let to = now + dt;
                advance(&mut now, to, late, &mut g);
            }
            Event::Stall { dt } => {
                now += dt;
                if g.poll().is_some_and(|t| t <= now) {
                    g.fire(now);
                }
            }
            Event::Reload { k } => {
                pi = k as usize % policies.len();
                match &mut g.pipe {
                    Pipe::Policy(p) => {
                        p.reload(now, &policies[pi]).expect("reload");
                    }
                    Pipe::Small(p) => p.replace_box(now, new_box(pi), "gateway", RELOAD_GRACE),
                }
                table.set_policy(policies[pi].flows.clone());
                max_table = max_table.max(policies[pi].flows.max_flows);
                if let Some(m) = g.pipe.mb() {
                    max_pipe_flows = max_pipe_flows.max(m.config().max_flows);
                    max_pending = max_pending.max(m.config().max_pending_bytes);
                }
            }
        }
        if let Some(m) = g.pipe.mb() {
            assert!(m.flows() <= max_pipe_flows, "pipeline flows {} > max_flows {max_pipe_flows}", m.flows());
            assert!(
                m.pending().1 <= max_pending,
                "pipeline origins {:?} > max_pending_bytes {max_pending}",
                m.pending()
            );
            if events % 32 == 0 {
                check_box_stats(&serde_json::to_value(m.middlebox().stats()).unwrap(), policies[pi].flows.max_flows);
            }
        }
    }
    // Let everything drain: every held packet must come out valid, the timers must stop or move on.
    for step in [Dur::from_secs(5), Dur::from_secs(60), Dur::from_secs(400)] {
        let to = now + step;
        advance(&mut now, to, Dur(0), &mut g);
    }
    if let Some(m) = g.pipe.mb() {
        let st = serde_json::to_value(m.middlebox().stats()).unwrap();
        check_box_stats(&st, policies[pi].flows.max_flows);
        check_drained(&st);
    }
    let _ = g.pipe.p().stats_json().to_string();
    if tracing() {
        eprintln!("{events} events, {} timer calls, {} frames out", g.fires, g.check.frames);
    }
}

/// `tap_frames`: see README.md.
pub fn tap_frames(data: &[u8]) {
    let specs = tap_policies();
    let mut u = Unstructured::new(data);
    let Ok(b) = u.arbitrary::<u8>() else { return };
    let mut si = b as usize % specs.len();
    if tracing() {
        eprintln!("tap policy {si}");
    }
    let mut t = T {
        tap: Tap::new(specs[si].clone()),
        macs: ([2, 0, 0, 0, 0, 0x11], [2, 0, 0, 0, 0, 0x12]),
        c: TapCounters::default(),
        emit: Emit::new(),
        check: OutputCheck::default(),
    };
    let mut out: Vec<Vec<u8>> = Vec::new();
    let mut world = World::default();
    let mut now = Time(1_000_000_000);

    loop {
        let ev = match world.next_event(&mut u) {
            Ok(Some(e)) => e,
            _ => break,
        };
        trace(now, &ev);
        match ev {
            Event::Frame { dt, frame, csum_not_ready, .. } => {
                let to = now + dt;
                advance(&mut now, to, Dur(0), &mut t);
                if !csum_not_ready {
                    t.check.fed(&frame);
                }
                out.clear();
                on_mirrored_frame(&mut t.tap, now, &frame, csum_not_ready, t.macs, &mut t.c, &mut t.emit, |f| {
                    out.push(f)
                });
                for f in &out {
                    if csum_not_ready && ackshape_wire::verify_checksums(&frame).is_err() {
                        // The TCP checksum is recomputed; an IPv4 header checksum stays as it came.
                        if fix_check_ip_only(&frame) {
                            continue;
                        }
                    }
                    t.check.check(f, "tap");
                }
            }
            Event::Advance { dt, late } => {
                let to = now + dt;
                advance(&mut now, to, late, &mut t);
            }
            Event::Stall { dt } => {
                now += dt;
                if t.poll().is_some_and(|x| x <= now) {
                    t.fire(now);
                }
            }
            Event::Reload { k } => {
                si = k as usize % specs.len();
                t.tap = Tap::new(specs[si].clone());
            }
        }
        let max = specs[si].max_flows;
        assert!(t.tap.flow_count() <= max, "tap flows {} > max_flows {max}", t.tap.flow_count());
    }
    let to = now + Dur::from_secs(100);
    advance(&mut now, to, Dur(0), &mut t);
    let st = serde_json::to_value(t.tap.stats()).unwrap();
    if tracing() {
        eprintln!("{} frames injected; counters {:?}", t.check.frames, t.c);
    }
    assert!(num(&st["flows_now"]) <= specs[si].max_flows as u64, "{st}");
}

/// The tap with the checks on what it injects.
struct T {
    tap: Tap,
    macs: ([u8; 6], [u8; 6]),
    c: TapCounters,
    emit: Emit,
    check: OutputCheck,
}

impl Timed for T {
    fn poll(&self) -> Option<Time> {
        self.tap.poll_timeout()
    }
    fn fire(&mut self, now: Time) {
        let mut out = Vec::new();
        on_tap_timeout(&mut self.tap, now, self.macs, &mut self.c, &mut self.emit, &mut out);
        for f in &out {
            self.check.check(f, "tap timer");
        }
    }
}

/// Whether a frame's IPv4 header checksum is bad (which the tap's recomputation does not touch).
fn fix_check_ip_only(frame: &[u8]) -> bool {
    matches!(ackshape_wire::verify_checksums(frame), Err(ackshape_wire::ChecksumError::Ipv4Header { .. }))
}

/// Bytes as text: UTF-8 if it is, else lossily.
fn text(data: &[u8]) -> std::borrow::Cow<'_, str> {
    String::from_utf8_lossy(data)
}

/// `policy_text`: the bytes as a gateway policy (`ackshape validate --policy`, then the box
/// `ackshape gateway` builds from it) and as a tap policy (`ackshape validate --tap`).
pub fn policy_text(data: &[u8]) {
    let t = text(data);
    if let Ok(p) = Policy::from_toml(&t, "fuzz.toml") {
        let _ = p.headline();
        if let Some(sp) = &p.shaping {
            let _ = sp.describe();
            for w in sp.warnings() {
                let _ = w.to_string();
            }
        }
        let _ = ackshape_live::gateway::pipeline_config(&p);
        let _ = PolicyPipeline::new(&p).stats_json();
    }
    if let Ok(spec) = ackshape_format::tap::from_toml(&t) {
        let tap = Tap::new(spec);
        let _ = serde_json::to_value(tap.stats()).unwrap();
    }
}

/// `scenario_text`: the bytes as a scenario file through what `ackshape validate SCENARIO` does:
/// parse and validate, build the simulation, read `[live.testbed]`, and the gateway boxes'
/// policy warnings.
pub fn scenario_text(data: &[u8]) {
    let t = text(data);
    let Ok(sc) = ackshape_sim::scenario::Scenario::parse(&t, "fuzz.toml") else { return };
    // Scenarios this big build for long (legitimately): not what this target is after.
    if sc.flow_count() > 64 {
        return;
    }
    if ackshape_sim::Sim::build(&sc, "fuzz.toml", None, Default::default()).is_err() {
        return;
    }
    if let Some(tb) = sc.live.as_ref().and_then(|l| l.get("testbed")) {
        use ackshape_live::testbed::TopologySpec;
        if let Ok(mut base) = toml::Table::try_from(TopologySpec::default()) {
            if let Some(tt) = tb.as_table() {
                for (k, v) in tt {
                    base.insert(k.clone(), v.clone());
                }
            }
            if let Ok(spec) = toml::Value::Table(base).try_into::<TopologySpec>() {
                let _ = spec.check();
            }
        }
    }
    for mb in &sc.middlebox {
        if let Some(Ok(p)) = ackshape_sim::middlebox::gateway_policy(mb, None) {
            for w in p.warnings() {
                let _ = w.to_string();
            }
        }
    }
}

/// `spoof_flow`: one shaped connection through the policy's gateway (`ackshape gateway`'s
/// `PolicyPipeline`: a class with TCR or PostACK, chosen by the first byte), its real packets —
/// the handshake, the sender's data, the receiver's ACKs and piggy-backed data, each side keeping
/// its sequence numbers — with spoofed variants mixed in: pure ACKs far ahead, far behind or at
/// random, ACKs with a spoofed sequence number, SYN-ACKs with window scale 14 and MSS 88, RSTs
/// and data with random numbers from either side, SYNs from the sender's side, and copies of
/// real packets with a bad TCP checksum. Every injected packet is marked by TTL 3. Asserted on
/// every frame the gateway emits: its IPv4 and TCP checksums are valid, unless it is byte for byte
/// a bad-checksum frame that was fed; a marked frame leaves byte for byte as it came (never
/// rebuilt or patched), unless the sender would accept it as the receiver's (in window, with an
/// acceptable ACK: nothing tells it from a real one, so it is checked as one); an unmarked frame
/// towards the sender has an ACK number no higher than the highest the receiver sent, a window no
/// larger than the largest the receiver advertised and a sequence number the receiver sent, and one towards the receiver a sequence number the sender
/// sent; state stays bounded (one tracked flow each way at most, ACKs held no more than the
/// receiver's real ACKs and the segments sent).
pub fn spoof_flow(data: &[u8]) {
    use ackshape_wire::{verify_checksums, Packet, TcpFlags};
    let mut u = Unstructured::new(data);
    let Ok(sel) = u.arbitrary::<u8>() else { return };
    let mech = match sel % 5 {
        0 => "{ kind = \"tcr\" }",
        1 => "{ kind = \"tcr\", pacing = \"class-tick\", allocation = \"equal\" }",
        2 => "{ kind = \"postack\" }",
        3 => "{ kind = \"postack\", variant = \"basic\" }",
        _ => "{ kind = \"tcr\", release = \"receiver-ack\" }",
    };
    let text = format!(
        "default_class = \"c\"\n[[class]]\nname = \"c\"\nrate = \"{}Mbit/s\"\nqueue = \"100pkt\"\nmechanism = {mech}\n",
        1 + (sel / 5) % 50
    );
    let policy = Policy::from_toml(&text, "spoof.toml").unwrap_or_else(|e| panic!("{e}"));
    if tracing() {
        eprintln!("policy:\n{text}");
    }
    let mut pipe = PolicyPipeline::new(&policy);
    const SND: [u8; 4] = [10, 0, 0, 1];
    const RCV: [u8; 4] = [10, 0, 1, 1];
    const MSS: u32 = 1000;
    let (iss, irs) = (1_000_000u32, 7_000_000u32);
    // Real endpoint state.
    let mut snd_nxt = iss.wrapping_add(1);
    let mut rcv_nxt = irs.wrapping_add(1);
    let mut hi_ack = iss.wrapping_add(1);
    let mut max_win: u16 = 0;
    let (mut real_acks, mut segs) = (0u64, 0u64);
    let mut fed_bad: std::collections::HashSet<Vec<u8>> = Default::default();
    let mut fed_marked: std::collections::HashSet<Vec<u8>> = Default::default();
    let mut now = Time(1_000_000);
    let mut out: Vec<OutFrame> = Vec::new();
    let frame = |from_sender: bool, seq: u32, ack: u32, flags: u8, win: u16, opts: &[u8], len: usize| {
        let (s, d, sp, dp) = if from_sender { (SND, RCV, 40_000, 80) } else { (RCV, SND, 80, 40_000) };
        let mut f = ackshape_live::testing::tcp_frame(s, d, sp, dp, seq, flags, opts, &vec![0x61; len]);
        f[42..46].copy_from_slice(&ack.to_be_bytes());
        f[48..50].copy_from_slice(&win.to_be_bytes());
        crate::fix_checksums(&mut f);
        f
    };
    let mark = |f: &mut Vec<u8>| {
        f[22] = 3;
        crate::fix_checksums(f);
    };
    // Returns whether the frame checked out.
    let show = |f: &[u8]| match Packet::parse_frame(f) {
        Ok(p) => format!("ttl {} {:?}", f[22], p.packet.l4),
        Err(e) => format!("{e:?}"),
    };
    let feed = |pipe: &mut PolicyPipeline, now: Time, dir: Dir, mut f: Vec<u8>, out: &mut Vec<OutFrame>| {
        if tracing() {
            eprintln!("{now:?} in  {dir:?} {}", show(&f));
        }
        let c = classify(&f);
        let _ = pipe.on_frame(now, dir, &mut f, &c);
        pipe.take_output(out);
    };
    // The handshake: SYN (wscale 7, MSS), SYN-ACK (wscale 7), ACK.
    let syn = frame(true, iss, 0, 0x02, 65535, &[2, 4, 0x03, 0xe8, 1, 3, 3, 7], 0);
    feed(&mut pipe, now, Dir::AToB, syn, &mut out);
    let synack = frame(false, irs, iss.wrapping_add(1), 0x12, 65535, &[2, 4, 0x03, 0xe8, 1, 3, 3, 7], 0);
    max_win = max_win.max(65535);
    feed(&mut pipe, now, Dir::BToA, synack, &mut out);
    let ack = frame(true, snd_nxt, rcv_nxt, 0x10, 1000, &[], 0);
    feed(&mut pipe, now, Dir::AToB, ack, &mut out);
    type Seen = std::collections::HashSet<Vec<u8>>;
    let check = |out: &mut Vec<OutFrame>,
                 hi_ack: u32,
                 max_win: u16,
                 rcv_nxt: u32,
                 snd_nxt: u32,
                 bad: &Seen,
                 marked: &Seen,
                 consistent: &std::collections::HashSet<u32>| {
        for o in out.drain(..) {
            let f = &o.frame[..];
            if tracing() {
                eprintln!("    out {:?} {}", o.dir, show(f));
            }
            if bad.contains(f) {
                continue; // a bad-checksum frame, forwarded as it came
            }
            verify_checksums(f).unwrap_or_else(|e| panic!("emitted frame with a bad checksum ({e:?}): {f:02x?}"));
            let spoof = f[22] == 3;
            let seq = u32::from_be_bytes([f[38], f[39], f[40], f[41]]);
            if spoof && (marked.contains(f) || !consistent.contains(&seq)) {
                assert!(marked.contains(f), "a spoof left changed: {f:02x?}");
                continue;
            }
            let p = Packet::parse_frame(f).expect("emitted frames parse").packet;
            let t = p.tcp().expect("TCP").clone();
            let to_sender = o.dir == Dir::BToA;
            if to_sender {
                if t.flags.contains(TcpFlags::ACK) {
                    let off = t.ack.0.wrapping_sub(iss);
                    assert!(off <= hi_ack.wrapping_sub(iss), "ACK {} beyond the receiver's {hi_ack}", t.ack.0);
                }
                assert!(t.window <= max_win, "window {} above the receiver's {max_win}", t.window);
                let s = t.seq.0.wrapping_sub(irs);
                assert!(spoof || s <= rcv_nxt.wrapping_sub(irs), "sequence number {} the receiver never sent", t.seq.0);
            } else {
                let s = t.seq.0.wrapping_sub(iss);
                assert!(s <= snd_nxt.wrapping_sub(iss), "sequence number {} the sender never sent", t.seq.0);
            }
        }
    };
    let mut consistent = std::collections::HashSet::new();
    let (mut ack_seen, mut rcv_seen, mut win_seen) = (hi_ack, rcv_nxt, 0u16);
    // The later of two sequence numbers, counted from `base`.
    let bigger = |a: u32, b: u32, base: u32| if b.wrapping_sub(base) > a.wrapping_sub(base) { b } else { a };
    check(&mut out, hi_ack, max_win, rcv_nxt, snd_nxt, &fed_bad, &fed_marked, &consistent);
    let mut rng = 0x9e37_79b9_7f4a_7c15u64;
    for step in 0..400 {
        let Ok((kind, n, win, dt, r)) = u.arbitrary::<(u8, u8, u16, u16, u32)>() else { break };
        rng = rng.wrapping_mul(6364136223846793005).wrapping_add(r as u64 | 1);
        now = now + Dur(dt as u64 * 2_000);
        let n = 1 + n as u32 % 8;
        let rr = (rng >> 32) as u32;
        let (dir, mut f, marked, bad) = match kind % 12 {
            0 | 1 => {
                let f = frame(true, snd_nxt, rcv_nxt, 0x18, 1000, &[], MSS as usize);
                snd_nxt = snd_nxt.wrapping_add(MSS);
                segs += 1;
                (Dir::AToB, f, false, false)
            }
            2 | 3 => {
                // The receiver acknowledges some of what was sent.
                let sent = snd_nxt.wrapping_sub(iss.wrapping_add(1));
                let a = hi_ack.wrapping_sub(iss.wrapping_add(1)).saturating_add(n * MSS).min(sent);
                let ackno = iss.wrapping_add(1).wrapping_add(a);
                hi_ack = ackno;
                let w = win.max(1);
                max_win = max_win.max(w);
                real_acks += 1;
                (Dir::BToA, frame(false, rcv_nxt, ackno, 0x10, w, &[], 0), false, false)
            }
            4 => {
                let f = frame(false, rcv_nxt, hi_ack, 0x18, win.max(1), &[], 100);
                max_win = max_win.max(win.max(1));
                rcv_nxt = rcv_nxt.wrapping_add(100);
                real_acks += 1;
                (Dir::BToA, f, false, false)
            }
            5 => {
                let a = match r % 4 {
                    0 => hi_ack.wrapping_add(1 << 30),
                    1 => hi_ack.wrapping_add((1 << 31) - 1),
                    2 => hi_ack.wrapping_sub(1 << 30),
                    _ => rr,
                };
                (Dir::BToA, frame(false, rcv_nxt, a, 0x10, win, &[], 0), true, false)
            }
            6 => (Dir::BToA, frame(false, rcv_nxt.wrapping_add(1 << 30 | rr >> 2), hi_ack, 0x10, win, &[], 0), true, false),
            7 => (Dir::BToA, frame(false, rr, r, 0x12, 65535, &[2, 4, 0, 88, 1, 3, 3, 14], 0), true, false),
            8 => (Dir::BToA, frame(false, rr, 0, 0x04, 0, &[], 0), true, false),
            9 => (Dir::BToA, frame(false, rr, r, 0x18, 65535, &[], 200), true, false),
            10 => {
                let f = if r % 2 == 0 {
                    frame(true, rr, 0, 0x02, 65535, &[1, 3, 3, 14], 0)
                } else {
                    frame(true, snd_nxt.wrapping_add(1 << 30 | rr >> 2), rcv_nxt, 0x18, 1000, &[], MSS as usize)
                };
                (Dir::AToB, f, true, false)
            }
            _ => {
                // A real packet's copy with a bad checksum (an ACK far ahead, or data).
                let f = if r % 2 == 0 {
                    frame(false, rcv_nxt, hi_ack.wrapping_add(1 << 30), 0x10, win, &[], 0)
                } else {
                    frame(true, snd_nxt, rcv_nxt, 0x18, 1000, &[], 200)
                };
                let dir = if r % 2 == 0 { Dir::BToA } else { Dir::AToB };
                (dir, f, true, true)
            }
        };
        if marked {
            mark(&mut f);
        }
        // A spoof from the receiver's side that its sender would accept (RFC 5961: sequence
        // number inside the sender's window, ACK between the highest ACK less the largest window
        // and the highest data sent) is indistinguishable from the receiver's own packet: the
        // gateway may learn from it, so it is held to the real packets' rules (with the bounds
        // it moves) instead of leaving byte for byte. Windows here are wider than the gateway's.
        if marked && !bad && dir == Dir::BToA {
            let p = Packet::parse_frame(&f).expect("built frames parse").packet;
            let (t, len) = (p.tcp().cloned().expect("TCP"), p.payload_len);
            let sw = 1u32 << 17; // the sender's window: 1000 << 7
            let rw = (max_win as u32).max(65_535) << 7;
            let within = |v: u32, lo: u32, hi: u32| v.wrapping_sub(lo) <= hi.wrapping_sub(lo);
            let (lo, hi) = (rcv_nxt.wrapping_sub(sw), rcv_nxt.wrapping_add(sw));
            let ok = t.flags.contains(TcpFlags::ACK)
                && !t.flags.contains(TcpFlags::SYN)
                && !t.flags.contains(TcpFlags::RST)
                && within(t.seq.0, lo, hi)
                && within(t.seq.0.wrapping_add(len), lo, hi)
                && within(t.ack.0, hi_ack.wrapping_sub(rw), snd_nxt);
            if ok {
                consistent.insert(t.seq.0);
                if t.ack.0.wrapping_sub(iss) > ack_seen.wrapping_sub(iss) {
                    ack_seen = t.ack.0;
                }
                let end = t.seq.0.wrapping_add(len);
                if end.wrapping_sub(irs) > rcv_seen.wrapping_sub(irs) {
                    rcv_seen = end;
                }
                win_seen = win_seen.max(t.window);
            }
        }
        if bad {
            f[51] ^= 0x5a;
            fed_bad.insert(f.clone());
            // The engine never hands a frame with a bad checksum to the pipeline: it forwards it
            // untouched (ackshape_live::engine verifies every TCP frame first).
            assert!(verify_checksums(&f).is_err());
            out.push(OutFrame { dir, frame: bytes::Bytes::from(f), due: None });
        } else {
            if marked {
                fed_marked.insert(f.clone());
            }
            feed(&mut pipe, now, dir, f, &mut out);
        }
        let (hi, mw, rn) = (bigger(hi_ack, ack_seen, iss), max_win.max(win_seen), bigger(rcv_nxt, rcv_seen, irs));
        check(&mut out, hi, mw, rn, snd_nxt, &fed_bad, &fed_marked, &consistent);
        while let Some(t) = pipe.poll_timeout().filter(|&t| t <= now) {
            pipe.on_timeout(t.max(now));
            pipe.take_output(&mut out);
            check(&mut out, hi, mw, rn, snd_nxt, &fed_bad, &fed_marked, &consistent);
            if pipe.poll_timeout() == Some(t) {
                break;
            }
        }
        if step % 50 != 49 {
            continue;
        }
        let st = pipe.stats_json();
        let flows = &st["stats"]["flows"];
        assert!(num(&flows["tracked"]) <= 2, "{flows}");
        let held = num(&st["stats"]["buffer"]["acks_max"]);
        assert!(held <= real_acks + segs + 1, "ACKs held {held} (real ACKs {real_acks}, segments {segs})");
    }
    let st = pipe.stats_json();
    assert!(num(&st["stats"]["flows"]["tracked"]) <= 2, "{}", st["stats"]["flows"]);
    let held = num(&st["stats"]["buffer"]["acks_max"]);
    assert!(held <= real_acks + segs + 1, "ACKs held {held} (real ACKs {real_acks}, segments {segs})");
}
