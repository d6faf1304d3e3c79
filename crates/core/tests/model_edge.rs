//! Paper 000's App. B/C model (`core::model_edge`): each formula against its own derivation.

use ackshape_core::model_edge::*;

/// The growth rule of App. B by brute force: largest n with w + (w+1) + … + (w+n−1) ≤ x·W_w.
fn g_brute(w: u64, x: u64, ww: u64) -> u64 {
    let (mut n, mut sum) = (0u64, 0u64);
    while sum + w + n <= x * ww {
        sum += w + n;
        n += 1;
    }
    w + n
}

#[test]
fn g_matches_the_growth_rule() {
    for ww in 1..=20u64 {
        for w in ww..=3 * ww {
            for x in 0..=60u64 {
                let closed = g(w as f64, x as f64, ww as f64, true);
                assert_eq!(closed as u64, g_brute(w, x, ww), "w={w} x={x} ww={ww}");
            }
        }
    }
}

#[test]
fn case1_throughput_follows_from_the_corrected_cycle_equation() {
    for &p in &[0.01f64, 0.03, 0.1, 0.3] {
        // Corrected (P0-4): 1/p = 3·W²/8 → W = √(8/(3p)); T = (1/p)/(W/2 + 1).
        let w = (8.0 / (3.0 * p)).sqrt();
        assert!((1.0 / p - 3.0 * w * w / 8.0).abs() < 1e-9);
        let t = (1.0 / p) / (w / 2.0 + 1.0);
        assert!((t - t_case1(p)).abs() < 1e-9 * t, "p={p}: {t} vs {}", t_case1(p));
        // The printed √(16/(3p)) does not give the printed T.
        let w_printed = (16.0 / (3.0 * p)).sqrt();
        assert!(((1.0 / p) / (w_printed / 2.0 + 1.0) - t_case1(p)).abs() > 1e-3);
    }
}

#[test]
fn pfq_case2_closed_form_solves_its_two_equations() {
    for &ww in &[4.0f64, 7.0, 10.0, 20.0] {
        let (lo, hi) = (2.0 / (3.0 * ww * ww - ww), 8.0 / (3.0 * ww * ww));
        for k in 1..10 {
            let p = lo + (hi - lo) * k as f64 / 10.0;
            assert_eq!(regime(p, ww), Regime::Case2);
            let (w, x, t) = pfq_case2(p, ww);
            // Linear phase from w/2 to W_w takes (W_w − w/2) D_w; the curved phase reaches w.
            let lin = ww - w / 2.0;
            let curved = x - lin;
            let reached = g(ww, curved, ww, false);
            assert!((reached - w).abs() < 1e-6 * w, "ww={ww} p={p}: g = {reached}, w = {w}");
            let packets = (w / 2.0 + ww) * lin / 2.0 + curved * ww + (w - ww);
            assert!((packets - 1.0 / p).abs() < 1e-6 / p, "ww={ww} p={p}: {packets} vs {}", 1.0 / p);
            assert!((t - (1.0 / p) / (x + 1.0)).abs() < 1e-12);
            assert!(w > ww && w <= 2.0 * ww + 1e-9, "case 2 means W_w < w ≤ 2W_w: {w}");
        }
    }
}

#[test]
fn tcr_formula_follows_from_its_cycle_equation_and_is_dimensionally_sane() {
    for &ww in &[3.0f64, 7.0, 10.0, 30.0] {
        for &p in &[0.0005, 0.001, 0.005] {
            if regime(p, ww) == Regime::Case1 {
                continue;
            }
            // 1/p = (W_w/2 + W_w)(W_w/2)/2 + W_w·x.
            let x = 1.0 / (p * ww) - 3.0 * ww / 8.0;
            let t = (1.0 / p) / (ww / 2.0 + x + 1.0);
            assert!((t - tcr(p, ww)).abs() < 1e-9 * t);
            // At most one pipe per round trip, and more than half of it.
            assert!(tcr(p, ww) <= ww && tcr(p, ww) > ww / 2.0, "ww={ww} p={p}: {}", tcr(p, ww));
        }
    }
    // The printed form gives less than one packet per round trip at W_w = 7 (P0-5).
    let printed = 1.0 / (1.0 / 7.0 + 7.0 / 8.0 + 0.01);
    assert!(printed < 1.0 && tcr(0.01, 7.0) > 6.0);
}

#[test]
fn regimes_cover_p_in_order_and_case1_is_continuous() {
    for &ww in &[4.0f64, 7.0, 10.0] {
        let b12 = 8.0 / (3.0 * ww * ww);
        let b23 = 2.0 / (3.0 * ww * ww - ww);
        assert!(b23 < b12);
        assert_eq!(regime(b12 * 1.001, ww), Regime::Case1);
        assert_eq!(regime(b12 * 0.999, ww), Regime::Case2);
        assert_eq!(regime(b23 * 0.999, ww), Regime::Case3);
        // PFQ is continuous at the case 1/2 boundary...
        let (a, b) = (pfq(b12 * 1.0001, ww), pfq(b12 * 0.9999, ww));
        assert!((a - b).abs() / a < 0.02, "ww={ww}: {a} vs {b}");
        // ...but jumps at the 2/3 boundary (P0-6): case 2's value there is above case 3's.
        let (c2, c3) = (pfq(b23 * 1.0001, ww), pfq(b23 * 0.9999, ww));
        assert!(c2 > c3 * 1.02, "ww={ww}: case 2 {c2}, case 3 {c3}");
    }
}

#[test]
fn pfq_is_at_least_tcr_and_both_stay_under_the_pipe() {
    for ww in [2.0, 5.0, 6.7, 10.0, 16.7, 40.0] {
        let mut p = 0.0005;
        while p < 0.2 {
            let pt = point(p, ww);
            assert!(pt.pfq >= pt.tcr - 1e-9, "{pt:?}");
            if pt.regime != Regime::Case1 {
                assert!(pt.pfq <= ww + 1e-9 && pt.tcr <= ww + 1e-9, "{pt:?}");
            }
            p *= 1.3;
        }
    }
}

#[test]
fn units() {
    // 200 KB/s over 50 ms with 1500-byte packets: W_w = 6.67.
    assert!((ww(1.6e6, 0.05, 1500.0) - 6.6667).abs() < 1e-3);
    assert!((goodput_bps(6.0, 1460.0, 0.05) - 6.0 * 1460.0 * 8.0 / 0.05).abs() < 1e-6);
}
