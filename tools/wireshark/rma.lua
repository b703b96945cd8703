-- Wireshark/tshark dissector for softspin's RMA, remote memory access between
-- NICs (docs/rma.md; crates/wire/src/rma.rs is the Rust view of the same
-- header). RMA rides in UDP, port 21328 (0x5350) by default, with a 40-byte
-- big-endian header:
--   version u8, kind u8 (DATA 0, ACK 1, NACK 2, UNACK 3), op u8 (bit 7:
--   response), status u8, src rank u16, dst rank u16, seq u32, ack u32,
--   txn u32, key u32, offset u64, length u32, reserved u32, then the payload
--   (write data, read data, or an atomic's operands / old value).
--
-- Use:  tshark -X lua_script:tools/wireshark/rma.lua -r capture.pcap
--       (or copy to ~/.local/lib/wireshark/plugins/). Another port:
--       -o rma.udp_port:9400, or "Decode As... RMA".
-- The values here are checked against crates/wire by
-- crates/wire/tests/rma_dissector.rs on a capture built with that crate.

local rma = Proto("rma", "softspin remote memory access")

local HEADER_LEN = 40
local DEFAULT_PORT = 21328
local RESPONSE = 0x80

local kinds = { [0] = "DATA", [1] = "ACK", [2] = "NACK", [3] = "UNACK" }
local ops = { [0] = "none", [1] = "write", [2] = "read", [3] = "fadd32", [4] = "fadd64", [5] = "cas32",
    [6] = "cas64" }
local statuses = { [0] = "ok", [1] = "bad key", [2] = "out of window", [3] = "permission denied",
    [4] = "malformed", [5] = "unaligned atomic", [6] = "failed" }
local widths = { [3] = 4, [4] = 8, [5] = 4, [6] = 8 }

local f = rma.fields
f.version = ProtoField.uint8("rma.version", "Version", base.DEC)
f.kind = ProtoField.uint8("rma.kind", "Kind", base.DEC, kinds)
f.op = ProtoField.uint8("rma.op", "Op", base.HEX)
f.op_code = ProtoField.uint8("rma.op.code", "Operation", base.DEC, ops, 0x7f)
f.response = ProtoField.bool("rma.op.response", "Response", 8, nil, RESPONSE)
f.status = ProtoField.uint8("rma.status", "Status", base.DEC, statuses)
f.src_rank = ProtoField.uint16("rma.src_rank", "Source rank", base.DEC)
f.dst_rank = ProtoField.uint16("rma.dst_rank", "Destination rank", base.DEC)
f.seq = ProtoField.uint32("rma.seq", "Sequence number", base.DEC)
f.ack = ProtoField.uint32("rma.ack", "Acknowledgement", base.DEC)
f.txn = ProtoField.uint32("rma.txn", "Transaction id", base.DEC)
f.key = ProtoField.uint32("rma.key", "Memory key", base.DEC)
f.offset = ProtoField.uint64("rma.offset", "Offset", base.DEC)
f.length = ProtoField.uint32("rma.length", "Length", base.DEC)
f.reserved = ProtoField.uint32("rma.reserved", "Reserved", base.HEX)
f.operand = ProtoField.uint64("rma.operand", "Operand", base.HEX)
f.payload_len = ProtoField.uint32("rma.payload_len", "Payload length", base.DEC)
f.payload = ProtoField.bytes("rma.payload", "Payload")

local e_short = ProtoExpert.new("rma.short", "RMA header truncated (40 bytes needed)",
    expert.group.MALFORMED, expert.severity.ERROR)
rma.experts = { e_short }

rma.prefs.udp_port = Pref.uint("UDP port", DEFAULT_PORT, "UDP port RMA is decoded on")

function rma.dissector(tvb, pinfo, tree)
    local len = tvb:len()
    pinfo.cols.protocol = "RMA"
    local t = tree:add(rma, tvb(), "RMA")
    if len < HEADER_LEN then
        t:add_proto_expert_info(e_short)
        pinfo.cols.info = "RMA (truncated)"
        return len
    end
    t:add(f.version, tvb(0, 1))
    t:add(f.kind, tvb(1, 1))
    local ot = t:add(f.op, tvb(2, 1))
    ot:add(f.op_code, tvb(2, 1))
    ot:add(f.response, tvb(2, 1))
    t:add(f.status, tvb(3, 1))
    t:add(f.src_rank, tvb(4, 2))
    t:add(f.dst_rank, tvb(6, 2))
    t:add(f.seq, tvb(8, 4))
    t:add(f.ack, tvb(12, 4))
    t:add(f.txn, tvb(16, 4))
    t:add(f.key, tvb(20, 4))
    t:add(f.offset, tvb(24, 8))
    t:add(f.length, tvb(32, 4))
    t:add(f.reserved, tvb(36, 4))
    local kind, op_byte, status = tvb(1, 1):uint(), tvb(2, 1):uint(), tvb(3, 1):uint()
    local op, resp = bit.band(op_byte, 0x7f), bit.band(op_byte, RESPONSE) ~= 0
    local plen = len - HEADER_LEN
    t:add(f.payload_len, plen):set_generated()
    local w = widths[op]
    if w and plen > 0 and plen % w == 0 then
        for at = HEADER_LEN, len - w, w do
            t:add(f.operand, tvb(at, w), tvb(at, w):uint64())
        end
    elseif plen > 0 then
        t:add(f.payload, tvb(HEADER_LEN, plen))
    end
    local info
    if kind ~= 0 then
        info = string.format("RMA %s %d->%d seq %d ack %d", kinds[kind] or ("kind " .. kind), tvb(4, 2):uint(),
            tvb(6, 2):uint(), tvb(8, 4):uint(), tvb(12, 4):uint())
    else
        info = string.format("RMA %s %s %d->%d txn %d key %d off %s len %d", ops[op] or ("op " .. op),
            resp and "resp" or "req", tvb(4, 2):uint(), tvb(6, 2):uint(), tvb(16, 4):uint(), tvb(20, 4):uint(),
            tostring(tvb(24, 8):uint64()), tvb(32, 4):uint())
        if resp then info = info .. " [" .. (statuses[status] or ("status " .. status)) .. "]" end
    end
    pinfo.cols.info = info
    return len
end

local udp_port = DissectorTable.get("udp.port")
local registered = DEFAULT_PORT
udp_port:add(registered, rma)

function rma.prefs_changed()
    if rma.prefs.udp_port ~= registered then
        udp_port:remove(registered, rma)
        registered = rma.prefs.udp_port
        udp_port:add(registered, rma)
    end
end
