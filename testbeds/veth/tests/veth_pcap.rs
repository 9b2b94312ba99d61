//! The pcapng writer's frames decode in tshark as RoCE (BTH, CNP, AETH) with a correct
//! ICRC, and as PFC, on named interfaces with nanosecond timestamps. Needs `tshark`
//! (scripts/install-deps.sh installs it).

use std::net::Ipv4Addr;
use std::process::Command;

use veth_core::pcap::PcapngWriter;
use veth_core::wire::ib::{AethRepr, BthRepr, DEFAULT_PKEY, Syndrome, opcode};
use veth_core::wire::ipv4::Ecn;
use veth_core::wire::{pfc, roce};

fn frame(op: u8, ecn: Ecn, payload: &[u8]) -> Vec<u8> {
    let r = roce::Repr {
        eth_dst: [2, 0xfa, 0, 0, 0, 1],
        eth_src: [2, 0xfa, 0, 0, 0, 2],
        ip_src: Ipv4Addr::new(10, 0, 0, 2),
        ip_dst: Ipv4Addr::new(10, 0, 0, 1),
        dscp: 26,
        ecn,
        ttl: 64,
        ident: 7,
        udp_src: 0xc123,
        bth: BthRepr {
            opcode: op,
            solicited: false,
            pad_count: 0,
            pkey: DEFAULT_PKEY,
            dest_qp: 0x12,
            ack_req: op == opcode::RC_SEND_ONLY,
            psn: 5,
        },
        aeth: (op == opcode::RC_ACK).then_some(AethRepr {
            syndrome: Syndrome::Ack { credits: 0x1f },
            msn: 5,
        }),
        payload_len: payload.len(),
    };
    let mut b = vec![0u8; r.buffer_len()];
    r.emit(&mut b, payload);
    b
}

pub fn tshark(args: &[&str]) -> Option<String> {
    let out = Command::new("tshark").args(args).output().ok()?;
    assert!(
        out.status.success(),
        "tshark failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(String::from_utf8_lossy(&out.stdout).into_owned())
}

#[test]
fn tshark_decodes_roce_cnp_ack_and_pfc_with_valid_icrc() {
    let dir = std::env::temp_dir().join(format!("fabric-pcap-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("roce.pcapng");
    let mut w = PcapngWriter::new(std::fs::File::create(&path).unwrap()).unwrap();
    assert_eq!(w.add_interface("sw:p0→h0").unwrap(), 0);
    assert_eq!(w.add_interface("leaf1:p4→spine0").unwrap(), 1);
    // Nanosecond stamps (virtual time in the engine): 1 µs, then 7 ns apart.
    w.write_frame(0, 1_000, &frame(opcode::RC_SEND_ONLY, Ecn::Ce, &[0xab; 64]))
        .unwrap();
    w.write_frame(1, 1_007, &frame(opcode::CNP, Ecn::NotEct, &[0; 16]))
        .unwrap();
    w.write_frame(0, 1_014, &frame(opcode::RC_ACK, Ecn::NotEct, &[]))
        .unwrap();
    w.write_frame(
        1,
        2_000_000_021,
        &pfc::Repr::single(3, 0xffff).to_frame([2, 0xfa, 0, 0, 0, 9]),
    )
    .unwrap();
    w.flush().unwrap();
    drop(w);
    let p = path.to_str().unwrap();
    let Some(v) = tshark(&["-r", p, "-V"]) else {
        panic!("tshark not found: run scripts/install-deps.sh");
    };
    // Full decode: RoCE (InfiniBand over UDP 4791) and PFC, nothing malformed.
    assert_eq!(v.matches("\nInfiniBand\n").count(), 3, "{v}");
    assert!(
        v.contains("Opcode: Reliable Connection (RC) - SEND Only (4)"),
        "{v}"
    );
    assert!(
        v.contains("Opcode: Reliable Connection (RC) - Acknowledge (17)"),
        "{v}"
    );
    assert!(v.contains("AETH - ACK Extended Transport Header"), "{v}");
    // tshark 4.0 has no name for the CNP opcode 0x81 (newer releases call it CNP).
    assert!(
        v.contains("Opcode: Unknown (129)") || v.contains("CNP"),
        "{v}"
    );
    assert!(
        v.contains("Opcode: Class Based Flow Control [CBFC] Pause (0x0101)"),
        "{v}"
    );
    assert!(v.contains("CBFC Class Enable Vector: 0x0008, C3"), "{v}");
    assert!(!v.contains("Malformed"), "{v}");
    // Field by field: opcodes, QPs, ECN, and the ICRC tshark reads equals ours.
    let f = tshark(&[
        "-r",
        p,
        "-T",
        "fields",
        "-e",
        "infiniband.bth.opcode",
        "-e",
        "infiniband.bth.destqp",
        "-e",
        "ip.dsfield.ecn",
        "-e",
        "infiniband.invariant.crc",
        "-e",
        "macc.cbfc.pause_time.c3",
        "-e",
        "frame.interface_name",
        "-e",
        "frame.time_epoch",
    ])
    .unwrap();
    let rows: Vec<Vec<&str>> = f.lines().map(|l| l.split('\t').collect()).collect();
    assert_eq!(rows.len(), 4, "{f}");
    assert_eq!(rows[0][0], "4");
    assert_eq!(rows[1][0], "129");
    assert_eq!(rows[2][0], "17");
    assert_eq!(rows[0][1], "0x000012");
    assert_eq!(rows[0][2], "3", "CE mark visible");
    assert_eq!(rows[3][4], "65535", "PFC pause time of priority 3");
    // Each frame on its named interface, with its nanosecond timestamp.
    let ifaces: Vec<&str> = rows.iter().map(|r| r[5]).collect();
    assert_eq!(
        ifaces,
        ["sw:p0→h0", "leaf1:p4→spine0", "sw:p0→h0", "leaf1:p4→spine0"]
    );
    let times: Vec<&str> = rows.iter().map(|r| r[6]).collect();
    assert_eq!(
        times,
        ["0.000001000", "0.000001007", "0.000001014", "2.000000021"],
        "{f}"
    );
    let icrc = u32::from_str_radix(rows[0][3].trim_start_matches("0x"), 16).unwrap();
    let send = frame(opcode::RC_SEND_ONLY, Ecn::Ce, &[0xab; 64]);
    let ours = veth_core::wire::ib::icrc_ipv4(&send[14..send.len() - 4]);
    assert!(
        icrc == ours || icrc == ours.swap_bytes(),
        "tshark {icrc:#x} vs {ours:#x}"
    );
    std::fs::remove_dir_all(&dir).ok();
}
