//! The C header sdk/include/softspin_abi.h is the source of truth for the
//! guest ABI; this checks that crates/hpu/src/abi.rs mirrors every value.

use std::collections::HashMap;

use softspin_hpu::abi;

fn header() -> HashMap<String, i64> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../sdk/include/softspin_abi.h");
    let text = std::fs::read_to_string(path).expect("read softspin_abi.h");
    let mut m = HashMap::new();
    for line in text.lines() {
        let mut w = line.split_whitespace();
        if w.next() != Some("#define") {
            continue;
        }
        let (Some(name), Some(val)) = (w.next(), w.next()) else { continue };
        let v = val.trim_start_matches('(').trim_end_matches(')').trim_end_matches('u');
        let parsed = if let Some(h) = v.strip_prefix("0x") { i64::from_str_radix(h, 16) } else { v.parse() };
        if let Ok(x) = parsed {
            m.insert(name.to_string(), x);
        }
    }
    m
}

#[test]
fn rust_abi_matches_the_c_header() {
    let h = header();
    let want: &[(&str, i64)] = &[
        ("SOFTSPIN_L1_BASE", abi::L1_BASE as i64),
        ("SOFTSPIN_L1_CLUSTER_STRIDE", abi::L1_CLUSTER_STRIDE as i64),
        ("SOFTSPIN_L2_HANDLER_BASE", abi::L2_HANDLER_BASE as i64),
        ("SOFTSPIN_L2_PKT_BASE", abi::L2_PKT_BASE as i64),
        ("SOFTSPIN_PROG_MEM_BASE", abi::PROG_MEM_BASE as i64),
        ("SOFTSPIN_SYS_WRITE", abi::sys::WRITE as i64),
        ("SOFTSPIN_SYS_EXIT", abi::sys::EXIT as i64),
        ("SOFTSPIN_SYS_DMA", abi::sys::DMA as i64),
        ("SOFTSPIN_SYS_SEND_PACKET", abi::sys::SEND_PACKET as i64),
        ("SOFTSPIN_SYS_RDMA_PUT", abi::sys::RDMA_PUT as i64),
        ("SOFTSPIN_SYS_DMA_TO_HOST", abi::sys::DMA_TO_HOST as i64),
        ("SOFTSPIN_SYS_DMA_FROM_HOST", abi::sys::DMA_FROM_HOST as i64),
        ("SOFTSPIN_SYS_WRITE_TO_HOST", abi::sys::WRITE_TO_HOST as i64),
        ("SOFTSPIN_SYS_CMD_WAIT", abi::sys::CMD_WAIT as i64),
        ("SOFTSPIN_SYS_CMD_TEST", abi::sys::CMD_TEST as i64),
        ("SOFTSPIN_SYS_PUSH_COUNTER", abi::sys::PUSH_COUNTER as i64),
        ("SOFTSPIN_SYS_NOTIFY_POST", abi::sys::NOTIFY_POST as i64),
        ("SOFTSPIN_SYS_NOTIFY_WAIT", abi::sys::NOTIFY_WAIT as i64),
        ("SOFTSPIN_SYS_NOTIFY_TEST", abi::sys::NOTIFY_TEST as i64),
        ("SPIN_ERR_INVAL", abi::err::INVAL as i64),
        ("SPIN_ERR_ACCESS", abi::err::ACCESS as i64),
        ("SPIN_ERR_NOSYS", abi::err::NOSYS as i64),
        ("SPIN_ERR_BUSY", abi::err::BUSY as i64),
    ];
    for (name, v) in want {
        assert_eq!(h.get(*name), Some(v), "{name}");
    }
    let services = h.keys().filter(|k| k.starts_with("SOFTSPIN_SYS_")).count();
    assert_eq!(services, want.iter().filter(|(n, _)| n.starts_with("SOFTSPIN_SYS_")).count(), "a service was added to the header but not to abi.rs");
}
