//! Bytes as an SMPI time-independent trace (every rank's lines in one
//! file): parsing, the point-to-point programs and the matching reference
//! must give a value or an error naming a line, never a panic or a hang;
//! what is accepted is consistent (each message found by both its ends,
//! never larger than its receive buffer).
#![no_main]

use libfuzzer_sys::fuzz_target;
use softspin_netsim::trace;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Ok(t) = trace::parse_str("fuzz.txt", text) else { return };
    let Ok(p) = trace::programs(&t) else { return };
    // 1408: the matching handler's eager limit (UC_MT_EAGER_MAX)
    let Ok(r) = trace::reference(&p, 1408) else { return };
    for m in &r.messages {
        assert!(m.bytes <= m.capacity);
        assert_eq!(r.of_send(m.src, m.send_req), Some(m));
        assert_eq!(r.of_recv(m.dst, m.recv_req), Some(m));
    }
});
