-- Wireshark/tshark dissector for SLMP, the sPIN Lightweight Messaging
-- Protocol (seed 000, section 5.1.2; crates/wire/src/slmp.rs is the Rust view
-- of the same header). SLMP rides in UDP, port 9330 by default, with a 10-byte
-- big-endian header:
--   flags u16 (EOM 0x8000, SYN 0x4000, ACK 0x2000, the rest reserved),
--   message id u32, byte offset u32, then the payload.
--
-- Use:  tshark -X lua_script:tools/wireshark/slmp.lua -r capture.pcap
--       (or copy to ~/.local/lib/wireshark/plugins/). Another port:
--       -o slmp.udp_port:9400, or "Decode As... SLMP".
-- The values here are checked against crates/wire by
-- tools/lossy/tests/slmp_dissector.rs on a capture built with that crate.

local slmp = Proto("slmp", "sPIN Lightweight Messaging Protocol")

local HEADER_LEN = 10
local DEFAULT_PORT = 9330
local EOM, SYN, ACK = 0x8000, 0x4000, 0x2000

local f = slmp.fields
f.flags = ProtoField.uint16("slmp.flags", "Flags", base.HEX)
f.eom = ProtoField.bool("slmp.flags.eom", "EOM (end of message)", 16, nil, EOM)
f.syn = ProtoField.bool("slmp.flags.syn", "SYN (acknowledge this)", 16, nil, SYN)
f.ack = ProtoField.bool("slmp.flags.ack", "ACK (acknowledgement)", 16, nil, ACK)
f.reserved = ProtoField.uint16("slmp.flags.reserved", "Reserved", base.HEX, nil, 0x1fff)
f.msg_id = ProtoField.uint32("slmp.msg_id", "Message id", base.DEC)
f.offset = ProtoField.uint32("slmp.offset", "Offset", base.DEC)
f.payload_len = ProtoField.uint32("slmp.payload_len", "Payload length", base.DEC)
f.payload = ProtoField.bytes("slmp.payload", "Payload")

local e_short = ProtoExpert.new("slmp.short", "SLMP header truncated (10 bytes needed)",
    expert.group.MALFORMED, expert.severity.ERROR)
slmp.experts = { e_short }

slmp.prefs.udp_port = Pref.uint("UDP port", DEFAULT_PORT, "UDP port SLMP is decoded on")

local function flag_names(flags)
    local names = {}
    if bit.band(flags, SYN) ~= 0 then names[#names + 1] = "SYN" end
    if bit.band(flags, ACK) ~= 0 then names[#names + 1] = "ACK" end
    if bit.band(flags, EOM) ~= 0 then names[#names + 1] = "EOM" end
    return table.concat(names, ",")
end

function slmp.dissector(tvb, pinfo, tree)
    local len = tvb:len()
    pinfo.cols.protocol = "SLMP"
    local t = tree:add(slmp, tvb(), "SLMP")
    if len < HEADER_LEN then
        t:add_proto_expert_info(e_short)
        pinfo.cols.info = "SLMP (truncated)"
        return len
    end
    local flags = tvb(0, 2):uint()
    local ft = t:add(f.flags, tvb(0, 2))
    ft:add(f.eom, tvb(0, 2))
    ft:add(f.syn, tvb(0, 2))
    ft:add(f.ack, tvb(0, 2))
    ft:add(f.reserved, tvb(0, 2))
    local msg_id = tvb(2, 4):uint()
    local offset = tvb(6, 4):uint()
    t:add(f.msg_id, tvb(2, 4))
    t:add(f.offset, tvb(6, 4))
    local plen = len - HEADER_LEN
    t:add(f.payload_len, plen):set_generated()
    if plen > 0 then
        t:add(f.payload, tvb(HEADER_LEN, plen))
    end
    local names = flag_names(flags)
    local info = string.format("SLMP msg %d off %d", msg_id, offset)
    if names ~= "" then info = info .. " [" .. names .. "]" end
    if plen > 0 then info = info .. string.format(" len %d", plen) end
    pinfo.cols.info = info
    return len
end

local udp_port = DissectorTable.get("udp.port")
local registered = DEFAULT_PORT
udp_port:add(registered, slmp)

function slmp.prefs_changed()
    if slmp.prefs.udp_port ~= registered then
        udp_port:remove(registered, slmp)
        registered = slmp.prefs.udp_port
        udp_port:add(registered, slmp)
    end
end
