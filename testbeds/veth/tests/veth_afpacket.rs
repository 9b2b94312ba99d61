//! Root-only: the AF_PACKET layer's TPACKET_V2 receive ring on a real veth pair —
//! frames arrive whole and in order across many wrap-arounds of the ring, a full ring
//! drops (and counts) what does not fit instead of blocking the sender, `readable`
//! sees a waiting frame without a system call, and slots are handed back; a socket with
//! a transmit ring sends every frame whole and in order.

use veth::afpacket::{BATCH, PacketSocket};
use veth::{Testbed, root_tests_enabled};

fn enabled() -> bool {
    match root_tests_enabled() {
        Ok(b) => b,
        Err(why) => panic!("{why}"),
    }
}

/// A frame of `len` bytes to `dst` with an experimental ethertype (IEEE 802 local,
/// 0x88B5) and a sequence number, the rest a pattern derived from it.
fn frame(dst: [u8; 6], src: [u8; 6], seq: u32, len: usize) -> Vec<u8> {
    let mut f = vec![0u8; len];
    f[..6].copy_from_slice(&dst);
    f[6..12].copy_from_slice(&src);
    f[12..14].copy_from_slice(&0x88b5u16.to_be_bytes());
    f[14..18].copy_from_slice(&seq.to_be_bytes());
    for (i, b) in f[18..].iter_mut().enumerate() {
        *b = (seq as usize + i) as u8;
    }
    f
}

fn check(f: &[u8], seq: u32, len: usize) {
    assert_eq!(f.len(), len, "frame {seq}: length");
    assert_eq!(
        u32::from_be_bytes(f[14..18].try_into().unwrap()),
        seq,
        "order"
    );
    for (i, b) in f[18..].iter().enumerate() {
        assert_eq!(*b, (seq as usize + i) as u8, "frame {seq}: byte {i}");
    }
}

#[test]
fn ring_delivers_every_frame_in_order_and_counts_overflow() {
    if !enabled() {
        return;
    }
    let mut tb = Testbed::new().unwrap();
    let a = tb.add_netns("ra").unwrap();
    let b = tb.add_netns("rb").unwrap();
    let l = tb.connect(&a, "e0", &b, "e1").unwrap();
    let mut tx = PacketSocket::open(&a, "e0").unwrap();
    let mut rx = PacketSocket::open(&b, "e1").unwrap();
    let slots = rx.ring_frames();
    assert!(slots >= 2 * BATCH, "ring of {slots} slots");
    assert!(!rx.readable());
    assert_eq!(rx.recv_batch(), 0);

    // 1. Three times around the ring, reading as we go: every frame, whole, in order.
    let len_of = |seq: u32| 60 + (seq as usize * 37) % 1455; // 60..=1514 bytes
    let total = 3 * slots as u32 + 17;
    let (mut next_rx, mut seq) = (0u32, 0u32);
    while next_rx < total {
        if seq < total {
            let batch: Vec<Vec<u8>> = (seq..(seq + 32).min(total))
                .map(|s| frame(l.b_mac, l.a_mac, s, len_of(s)))
                .collect();
            let n = tx.send_batch(&batch);
            seq += n as u32;
            // Visible in the ring's memory, no system call on the socket: usually at
            // once, but when other traffic has used up the softirq's budget the kernel
            // delivers the rest from ksoftirqd a moment later, so it is polled for.
            let t = std::time::Instant::now();
            while !rx.readable() {
                assert!(
                    t.elapsed() < std::time::Duration::from_secs(10),
                    "a sent frame is not visible in the ring"
                );
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
        }
        let k = rx.recv_batch();
        for i in 0..k {
            check(rx.frame(i), next_rx, len_of(next_rx));
            next_rx += 1;
        }
    }
    rx.release_batch();
    assert_eq!(rx.read_kernel_drops(), 0);
    assert_eq!(rx.truncated, 0);
    assert!(!rx.readable());

    // 2. Nobody reads: the ring holds exactly its slots, the rest is dropped and
    //    counted by the kernel; the sender is never blocked.
    let extra = 100;
    let mut sent = 0;
    while sent < slots + extra {
        let batch: Vec<Vec<u8>> = (0..BATCH.min(slots + extra - sent))
            .map(|i| frame(l.b_mac, l.a_mac, (sent + i) as u32, 200))
            .collect();
        let n = tx.send_batch(&batch);
        assert_eq!(n, batch.len(), "the sender is not blocked by a full ring");
        sent += n;
    }
    let mut got = 0;
    loop {
        let k = rx.recv_batch();
        if k == 0 {
            break;
        }
        for i in 0..k {
            check(rx.frame(i), (got + i) as u32, 200);
        }
        got += k;
    }
    assert_eq!(got, slots, "a full ring holds exactly its slots");
    assert_eq!(rx.read_kernel_drops(), extra as u64, "overflow counted");
    drop((tx, rx));
    tb.teardown().unwrap();
}

#[test]
fn tx_ring_sends_every_frame_whole_and_in_order() {
    if !enabled() {
        return;
    }
    let mut tb = Testbed::new().unwrap();
    let a = tb.add_netns("ta").unwrap();
    let b = tb.add_netns("tb").unwrap();
    let l = tb.connect(&a, "e0", &b, "e1").unwrap();
    let mut tx = PacketSocket::open_with_tx_ring(&a, "e0").unwrap();
    let mut rx = PacketSocket::open(&b, "e1").unwrap();
    // Several times around the transmit ring (1 MiB: a few hundred slots), reading as
    // we go; frames of 60..=1514 bytes.
    let len_of = |seq: u32| 60 + (seq as usize * 53) % 1455;
    let total = 2_000u32;
    let (mut next_rx, mut seq, mut rounds) = (0u32, 0u32, 0u32);
    while next_rx < total {
        rounds += 1;
        assert!(rounds < 1_000_000, "stuck: {seq} sent, {next_rx} received");
        if seq < total {
            let batch: Vec<Vec<u8>> = (seq..(seq + 48).min(total))
                .map(|s| frame(l.b_mac, l.a_mac, s, len_of(s)))
                .collect();
            seq += tx.send_ring(&batch) as u32;
        }
        let k = rx.recv_batch();
        for i in 0..k {
            check(rx.frame(i), next_rx, len_of(next_rx));
            next_rx += 1;
        }
    }
    rx.release_batch();
    assert_eq!((rx.read_kernel_drops(), rx.truncated), (0, 0));
    drop((tx, rx));
    tb.teardown().unwrap();
}
