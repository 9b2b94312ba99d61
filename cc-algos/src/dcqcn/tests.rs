//! DCQCN behaviour pinned to the paper's rules, on simulated time.

use super::*;
use crate::traits::{DataArrival, Feedback, ReceiverCc, SenderCc};
use crate::units::Instant;
use proptest::prelude::*;

const G100: Rate = Rate::gbps(100);

fn at_us(us: u64) -> Instant {
    Instant::ZERO + Duration::micros(us)
}

fn paper() -> DcqcnRp {
    DcqcnConfig::paper(G100).build().unwrap()
}

/// Fire the next deadline.
fn tick(rp: &mut DcqcnRp) -> Instant {
    let t = rp.next_timeout().expect("a deadline");
    rp.on_timeout(t);
    t
}

#[test]
fn first_cnp_at_alpha_one_halves_the_rate() {
    let mut rp = paper();
    assert_eq!(rp.rate(), G100);
    assert_eq!(rp.next_timeout(), None, "no timer before the first CNP");
    rp.on_cnp(at_us(10));
    assert_eq!(rp.rate(), Rate::gbps(50));
    assert_eq!(rp.target_rate(), G100);
    // α = (1−g)·1 + g = 1.
    assert_eq!(rp.alpha(), 1.0);
    assert_eq!(rp.next_timeout(), Some(at_us(65)));
}

#[test]
fn five_fast_recovery_steps_give_98_4375() {
    let mut rp = paper();
    rp.on_cnp(at_us(0));
    let mut expect = 50e9;
    for step in 1..=5 {
        let t = tick(&mut rp);
        assert_eq!(t, at_us(55 * step));
        expect = (expect + 100e9) / 2.0;
        assert_eq!(rp.rate_bps(), expect);
        assert_eq!(rp.target_rate(), G100, "fast recovery keeps RT");
    }
    assert_eq!(rp.rate_bps(), 100e9 - 50e9 / 32.0);
    assert_eq!(rp.rate(), Rate::bps(98_437_500_000));
}

#[test]
fn alpha_halves_in_about_177_periods() {
    let g = 1.0 / 256.0;
    let hl = alpha_half_life_periods(g);
    assert!((hl - 177.09).abs() < 0.01, "{hl}");
    let mut rp = paper();
    rp.on_cnp(at_us(0));
    assert_eq!(rp.alpha(), 1.0);
    let a177 = rp.alpha_at(at_us(55 * 177));
    let a178 = rp.alpha_at(at_us(55 * 178));
    assert!(a177 > 0.5 && a177 < 0.501, "{a177}");
    assert!(a178 < 0.5, "{a178}");
    assert!((a177 - (1.0 - g).powi(177)).abs() < 1e-12);
    // Just before a period boundary there is no decay yet.
    assert_eq!(rp.alpha_at(at_us(55) - Duration::picos(1)), 1.0);
}

#[test]
fn increase_stages_follow_the_paper() {
    // Drive T and BC by hand and check each RT step: FR (0) while max(T,BC) < F,
    // AI (+40 Mb/s) otherwise, HAI (+(min−F)·200 Mb/s) once min(T,BC) > F.
    let mut rp = paper();
    rp.on_cnp(at_us(0));
    rp.on_cnp(at_us(1)); // RT = 50 G, RC = 25 G: room to grow
    assert_eq!(rp.target_rate(), Rate::gbps(50));
    let ai = 40e6;
    let hai = 200e6;
    let mut t = at_us(1);
    let mut rt = 50e9;
    // 5 byte-counter expiries (BC 0..4): FR.
    for _ in 0..5 {
        rp.on_send(t, Bytes::mb(10));
        assert_eq!(rp.target_rate().as_bps_f64(), rt);
    }
    assert_eq!(rp.stages(), (0, 5));
    // Timer expiries: T = 0..4 with BC = 5 → max = 5 ≥ F, min < F: AI each time.
    for _ in 0..5 {
        t = tick(&mut rp);
        rt += ai;
        assert_eq!(rp.target_rate().as_bps_f64(), rt);
    }
    // T = 5, BC = 5: AI. Then T = 6, BC = 5: still AI (min = 5, not > F).
    for _ in 0..2 {
        t = tick(&mut rp);
        rt += ai;
        assert_eq!(rp.target_rate().as_bps_f64(), rt);
    }
    assert_eq!(rp.stages(), (7, 5));
    // BC = 5 → 6 expiry evaluates (T=7, BC=5): AI; next (T=7, BC=6): HAI ×1; (7,7): HAI ×2.
    rp.on_send(t, Bytes::mb(10));
    rt += ai;
    assert_eq!(rp.target_rate().as_bps_f64(), rt);
    rp.on_send(t, Bytes::mb(10));
    rt += hai;
    assert_eq!(rp.target_rate().as_bps_f64(), rt);
    rp.on_send(t, Bytes::mb(10));
    rt += 2.0 * hai;
    assert_eq!(rp.target_rate().as_bps_f64(), rt);
}

#[test]
fn flat_hyper_increase_and_timer_only_for_hpcc() {
    let mut rp = DcqcnConfig::hpcc_ns3(G100).build().unwrap();
    // R_AI = 5 Mb/s × 4, R_HAI = 50 Mb/s × 4 at 100 Gb/s.
    assert_eq!(rp.config().rate_ai, Rate::mbps(20));
    assert_eq!(rp.config().rate_hai, Rate::mbps(200));
    rp.on_cnp(at_us(0));
    assert_eq!(rp.rate(), Rate::gbps(50));
    // No byte counter: sending does not increase.
    rp.on_send(at_us(0), Bytes::mb(100));
    assert_eq!(rp.rate(), Rate::gbps(50));
    // F = 1: stage 0 FR, stage 1 AI, stages 2.. flat HAI.
    let t = tick(&mut rp);
    assert_eq!(t, at_us(300));
    assert_eq!(rp.target_rate(), G100);
    assert_eq!(rp.rate(), Rate::gbps(75));
}

#[test]
fn mellanox_spaces_cuts_by_4us_and_defers_the_second() {
    let mut rp = DcqcnConfig::mellanox(G100).build().unwrap();
    rp.on_cnp(at_us(10));
    let r1 = rp.rate_bps();
    // α at first CNP is 1023/1024.
    assert!((r1 - 100e9 * (1.0 - 1023.0 / 2048.0)).abs() < 1.0);
    rp.on_cnp(at_us(11));
    assert_eq!(rp.rate_bps(), r1, "no second cut within 4 µs");
    assert_eq!(rp.next_timeout(), Some(at_us(14)));
    rp.on_cnp(at_us(12)); // still one pending cut only
    rp.on_timeout(at_us(14));
    assert!(rp.rate_bps() < r1);
    assert_eq!(rp.counters(), (3, 2));
    // clamp_tgt_rate = 0: no increase between the cuts, RT stays the line rate.
    assert_eq!(rp.target_rate(), G100);
}

#[test]
fn periodic_alpha_matches_closed_form() {
    let cfg = DcqcnConfig::mellanox(G100);
    let g = cfg.g;
    let mut rp = cfg.build().unwrap();
    rp.on_cnp(at_us(0)); // α = 1023/1024, no flag (first CNP only initialises)
    let a0 = 1023.0 / 1024.0;
    rp.on_cnp(Instant::ZERO + Duration::nanos(500)); // flag for period (0, 1 µs]
    // After boundary 1: (1−g)α + g; then 9 pure decays by boundary 10.
    let want = ((1.0 - g) * a0 + g) * (1.0 - g).powi(9);
    let got = rp.alpha_at(at_us(10));
    assert!((got - want).abs() < 1e-12, "{got} vs {want}");
}

#[test]
fn timer_stops_once_back_at_line_rate() {
    let mut rp = paper();
    rp.on_cnp(at_us(0));
    let mut n = 0;
    while rp.next_timeout().is_some() {
        tick(&mut rp);
        n += 1;
        assert!(n < 10_000, "never recovered");
    }
    assert_eq!(rp.rate(), G100);
    assert_eq!(rp.target_rate(), G100);
}

#[test]
fn late_on_timeout_catches_up_every_expiry() {
    let mut a = paper();
    let mut b = paper();
    a.on_cnp(at_us(0));
    b.on_cnp(at_us(0));
    for _ in 0..7 {
        tick(&mut a);
    }
    b.on_timeout(at_us(55 * 7)); // one late call
    assert_eq!(a.rate_bps(), b.rate_bps());
    assert_eq!(a.stages(), b.stages());
}

#[test]
fn np_sends_at_most_one_cnp_per_interval_per_flow() {
    let mut np = DcqcnConfig::paper(G100).build_np();
    let mut cnps = Vec::new();
    // Flow 1 marked every µs for 200 µs, flow 2 every 7 µs; flow 3 never marked.
    for us in 0..200u64 {
        for (flow, marked) in [(1, true), (2, us % 7 == 0), (3, false)] {
            np.on_data(
                at_us(us),
                DataArrival {
                    flow,
                    bytes: Bytes(1000),
                    ce: marked,
                    trimmed: false,
                },
            );
            while let Some(Feedback::Cnp { flow }) = np.poll_feedback(at_us(us)) {
                cnps.push((flow, us));
            }
        }
    }
    let f1: Vec<u64> = cnps.iter().filter(|c| c.0 == 1).map(|c| c.1).collect();
    assert_eq!(f1, vec![0, 50, 100, 150]);
    let f2: Vec<u64> = cnps.iter().filter(|c| c.0 == 2).map(|c| c.1).collect();
    assert_eq!(f2, vec![0, 56, 112, 168]);
    assert!(cnps.iter().all(|c| c.0 != 3));
    assert_eq!(np.cnps_sent, 8);
}

#[test]
fn bad_config_names_the_field() {
    let mut c = DcqcnConfig::paper(G100);
    c.min_rate = Rate::gbps(200);
    assert!(c.build().unwrap_err().to_string().contains("min_rate"));
    let mut c = DcqcnConfig::paper(G100);
    c.g = 0.0;
    assert!(c.build().unwrap_err().to_string().contains("`g`"));
    assert!("foo".parse::<DcqcnPreset>().is_err());
}

#[derive(Clone, Debug)]
enum Ev {
    Cnp,
    Send(u64),
    Advance(u64),
}

fn ev() -> impl Strategy<Value = Ev> {
    prop_oneof![
        Just(Ev::Cnp),
        (1u64..20_000_000).prop_map(Ev::Send),
        (1u64..400_000_000).prop_map(Ev::Advance), // up to 400 µs in ps
    ]
}

proptest! {
    /// For every preset and event sequence: the rate stays in [min_rate, line_rate],
    /// RT stays ≤ line, α in [0, 1], nothing is NaN, deadlines never lie in the past.
    #[test]
    fn rate_stays_in_bounds(preset in 0..3usize, evs in proptest::collection::vec(ev(), 1..200)) {
        let p = [DcqcnPreset::Paper, DcqcnPreset::Mellanox, DcqcnPreset::HpccNs3][preset];
        let cfg = DcqcnConfig::preset(p, G100);
        let mut rp = cfg.build().unwrap();
        let mut now = Instant::ZERO;
        for e in evs {
            match e {
                Ev::Cnp => rp.on_cnp(now),
                Ev::Send(b) => rp.on_send(now, Bytes(b)),
                Ev::Advance(ps) => {
                    let end = now + Duration::picos(ps);
                    while let Some(t) = rp.next_timeout().filter(|&t| t <= end) {
                        prop_assert!(t >= now, "deadline {t} before now {now}");
                        now = t;
                        rp.on_timeout(now);
                    }
                    now = end;
                }
            }
            let r = rp.rate_bps();
            prop_assert!(!r.is_nan() && !rp.alpha().is_nan());
            prop_assert!(rp.rate() >= cfg.min_rate && rp.rate() <= cfg.line_rate, "{}", rp.rate());
            prop_assert!(rp.target_rate() <= cfg.line_rate);
            prop_assert!((0.0..=1.0).contains(&rp.alpha()));
        }
    }
}

#[test]
fn unclamped_target_stays_at_line_until_a_timer_increase() {
    // Firmware semantics (clamp_tgt_rate = 0, clamp after a timer increase only): a
    // byte-counter step recovers half the gap to RT = line rate, and the next cut does
    // not lower RT because no timer increase happened in between.
    let mut rp = DcqcnConfig::mellanox(G100).build().unwrap();
    rp.on_cnp(at_us(0));
    let r1 = rp.rate_bps();
    rp.on_send(at_us(1), Bytes(32_767));
    assert_eq!(rp.stages(), (0, 1));
    assert!((rp.rate_bps() - (r1 + 100e9) / 2.0).abs() < 1e-3);
    rp.on_cnp(at_us(5));
    assert_eq!(rp.target_rate(), G100);
    // After a timer increase, the next cut clamps RT to the current rate.
    let t = tick(&mut rp);
    assert_eq!(t, at_us(305));
    let before = rp.rate();
    rp.on_cnp(at_us(306));
    assert_eq!(rp.target_rate(), before);
    // The paper always clamps.
    let mut p = paper();
    p.on_cnp(at_us(0));
    p.on_cnp(at_us(1));
    assert_eq!(p.target_rate(), Rate::gbps(50));
}
