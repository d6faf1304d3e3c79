//! `AsymDiscSpec` serde format: one TOML snippet per kind, defaults, and clear errors.

use ackshape_core::shape::asym::{AsymDiscSpec, CakeMode, SizeModifierSpec};

fn parse(s: &str) -> Result<AsymDiscSpec, toml::de::Error> {
    toml::from_str(s)
}

#[test]
fn one_snippet_per_kind() {
    let cases: Vec<(&str, AsymDiscSpec)> = vec![
        ("kind = \"fifo\"\nlimit_pkts = 200\n", AsymDiscSpec::Fifo { limit_pkts: 200 }),
        (
            "kind = \"acks-first\"\nack_limit_pkts = 50\ndata_limit_pkts = 100\n",
            AsymDiscSpec::AcksFirst { ack_limit_pkts: 50, data_limit_pkts: 100 },
        ),
        (
            "kind = \"ack-filter-classic\"\nlimit_pkts = 100\nkeep_position = true\n",
            AsymDiscSpec::AckFilterClassic { limit_pkts: 100, keep_position: true },
        ),
        (
            "kind = \"ack-filter-cake\"\nlimit_pkts = 100\nmode = \"aggressive\"\n",
            AsymDiscSpec::AckFilterCake { limit_pkts: 100, mode: CakeMode::Aggressive },
        ),
        (
            "kind = \"acq\"\nrate_bps = 800000\nreverse_rate_bps = 2100000\nperiod_ms = 200\nstep = 0.05\n",
            AsymDiscSpec::Acq {
                rate_bps: 800_000,
                reverse_rate_bps: 2_100_000,
                ack_limit_pkts: 100,
                data_limit_pkts: 100,
                period_ms: 200,
                step: 0.05,
                initial_ack_weight: 0.5,
                round_bytes: 3000,
            },
        ),
        (
            "kind = \"afvq\"\ns_max = 5\nn_thr = 36\nmodifier = \"sampled\"\nperiod_ms = 1000\n",
            AsymDiscSpec::Afvq {
                s_max: 5,
                n_thr: 36,
                data_limit_pkts: 100,
                non_tcp_limit_pkts: 100,
                modifier: SizeModifierSpec::Sampled,
                period_ms: 1000,
                quantum_bytes: 1500,
            },
        ),
    ];
    for (text, want) in cases {
        let got = parse(text).unwrap_or_else(|e| panic!("{text}: {e}"));
        assert_eq!(got, want);
        got.validate().unwrap();
        // Round trip.
        let back = toml::to_string(&got).unwrap();
        assert_eq!(parse(&back).unwrap(), want);
    }
}

#[test]
fn defaults() {
    assert_eq!(parse("kind = \"fifo\"").unwrap(), AsymDiscSpec::Fifo { limit_pkts: 100 });
    assert_eq!(
        parse("kind = \"afvq\"").unwrap(),
        AsymDiscSpec::Afvq {
            s_max: 5,
            n_thr: 36,
            data_limit_pkts: 100,
            non_tcp_limit_pkts: 100,
            modifier: SizeModifierSpec::Continuous,
            period_ms: 1000,
            quantum_bytes: 1500,
        }
    );
    assert_eq!(
        parse("kind = \"ack-filter-cake\"").unwrap(),
        AsymDiscSpec::AckFilterCake { limit_pkts: 100, mode: CakeMode::Conservative }
    );
}

#[test]
fn errors_name_the_problem() {
    let e = parse("kind = \"afvq\"\nsmax = 5\n").unwrap_err().to_string();
    assert!(e.contains("smax"), "{e}");
    let e = parse("kind = \"ackfilter\"\n").unwrap_err().to_string();
    assert!(e.contains("ackfilter"), "{e}");
    let e = parse("kind = \"ack-filter-cake\"\nmode = \"agressive\"\n").unwrap_err().to_string();
    assert!(e.contains("agressive"), "{e}");
    let e = parse("kind = \"acq\"\nrate_bps = 1000\n").unwrap_err().to_string();
    assert!(e.contains("reverse_rate_bps"), "{e}");
    let v = parse("kind = \"afvq\"\ns_max = 0\n").unwrap().validate().unwrap_err().to_string();
    assert!(v.contains("afvq") && v.contains("s_max"), "{v}");
    let v = parse("kind = \"acq\"\nrate_bps = 1\nreverse_rate_bps = 1\nstep = 0.9\n").unwrap().validate().unwrap_err();
    assert_eq!(v.field, "step");
}
