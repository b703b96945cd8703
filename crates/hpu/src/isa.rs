//! RV32IMAC + Zicsr instruction decoding into the pre-decoded form the
//! interpreter dispatches on.
//!
//! Every instruction (16- or 32-bit) becomes one [`Inst`]: an operation plus
//! register numbers and one immediate. Compressed instructions decode to the
//! same operations as their 32-bit expansions, so the interpreter has a single
//! implementation of each. Values that only depend on the instruction's
//! address (AUIPC results, branch and JAL targets) are folded into the
//! immediate at decode time, which is why decoding takes the pc.

/// Register that writes to x0 are redirected to, so the interpreter never has
/// to test `rd == 0`: reads of x0 always see 0, writes land in this sink.
pub const REG_SINK: u8 = 32;

/// Pre-decoded operations. `Li` covers LUI and AUIPC (the value is computed at
/// decode time).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Op {
    Li,
    Jal,
    Jalr,
    Beq,
    Bne,
    Blt,
    Bge,
    Bltu,
    Bgeu,
    Lb,
    Lh,
    Lw,
    Lbu,
    Lhu,
    Sb,
    Sh,
    Sw,
    Addi,
    Slti,
    Sltiu,
    Xori,
    Ori,
    Andi,
    Slli,
    Srli,
    Srai,
    Add,
    Sub,
    Sll,
    Slt,
    Sltu,
    Xor,
    Srl,
    Sra,
    Or,
    And,
    Mul,
    Mulh,
    Mulhsu,
    Mulhu,
    Div,
    Divu,
    Rem,
    Remu,
    Fence,
    Ecall,
    Ebreak,
    /// Read of a user counter CSR; `imm` = CSR number. Writes trap at decode.
    CsrRead,
    LrW,
    ScW,
    AmoSwap,
    AmoAdd,
    AmoXor,
    AmoAnd,
    AmoOr,
    AmoMin,
    AmoMax,
    AmoMinu,
    AmoMaxu,
    /// Not a valid instruction; `imm` holds the raw bits.
    Illegal,
    /// Fetch from a pc that holds no executable code (the sentinel past the
    /// end of each executable range).
    NoExec,
    /// Decoder-cache artefact: jump to `imm` (costs nothing, retires nothing).
    Goto,
    // CORE-V (CV32E40P) extensions, see `corev.rs` for encodings and
    // semantics. Loads/stores: `Pi` = post-increment by `imm`, `Pr` =
    // post-increment by a register, `Rr` = register + register address.
    // Post-increment forms write the new base back to `rs1`; register-form
    // stores keep the third register (rs3) number in `imm`.
    CvLbPi,
    CvLhPi,
    CvLwPi,
    CvLbuPi,
    CvLhuPi,
    CvLbPr,
    CvLhPr,
    CvLwPr,
    CvLbuPr,
    CvLhuPr,
    CvLbRr,
    CvLhRr,
    CvLwRr,
    CvLbuRr,
    CvLhuRr,
    CvSbPi,
    CvShPi,
    CvSwPi,
    CvSbPr,
    CvShPr,
    CvSwPr,
    CvSbRr,
    CvShRr,
    CvSwRr,
    CvAbs,
    CvSlet,
    CvSletu,
    CvMin,
    CvMinu,
    CvMax,
    CvMaxu,
    CvExths,
    CvExthz,
    CvExtbs,
    CvExtbz,
    CvClip,
    CvClipu,
    CvClipr,
    CvClipur,
    CvAddN,
    CvAddUN,
    CvAddRN,
    CvAddURN,
    CvSubN,
    CvSubUN,
    CvSubRN,
    CvSubURN,
    CvAddNr,
    CvAddUNr,
    CvAddRNr,
    CvAddURNr,
    CvSubNr,
    CvSubUNr,
    CvSubRNr,
    CvSubURNr,
    /// Branch on `rs1 == sext(rs2 field)`: the 5-bit immediate is kept raw in
    /// `rs2`, the target in `imm`.
    CvBeqImm,
    CvBneImm,
    CvMac,
    CvMsu,
    CvMulsN,
    CvMulhhsN,
    CvMulsRN,
    CvMulhhsRN,
    CvMulUN,
    CvMulhhUN,
    CvMulURN,
    CvMulhhURN,
    CvMacsN,
    CvMachhsN,
    CvMacsRN,
    CvMachhsRN,
    CvMacUN,
    CvMachhUN,
    CvMacURN,
    CvMachhURN,
    // Superinstructions (`program::fuse`): only in the interpreter's copy
    // of the slots, never in `Program::insts`. The slot holds the first
    // instruction; the second is the next slot, which stays as it was (a
    // jump may land there).
    FAddiAddi,
    FLwLw,
    FAddAdd,
    FMulAdd,
    FSlliOr,
    FSrliSlli,
    FAddLw,
    FAddiBne,
    FSwLw,
    FLwMul,
    FSlliAdd,
    FAddSw,
    FAddAddi,
    FLwBlt,
    FLwSrli,
    FLwBne,
    FLiSb,
    FXorXor,
    FLiAddi,
    FLiLbu,
    FLbuLbu,
    FAddiBltu,
    FLwAndi,
    FSrliAndi,
    FAndiAdd,
    FLbuSlli,
    FSlliSrli,
    FOrXor,
    FLhLh,
    FSwSw,
    FOrSlli,
    FAddSlli,
    FLiLw,
    FOrOr,
    FAddiMul,
    FLiJalr,
    FSwJalr,
    FXorAndi,
    FAndXor,
    FAddiXor,
    FXorBne,
    FSrliSrli,
    FSrliSw,
    FLhuLhu,
    FShSh,
    FAddiSb,
    FSbSb,
    /// `li rd` + an instruction whose base is `rd` (see `program::fuse_li_base`).
    FLiLbuAbs,
    FLiSbAbs,
    FLiLwAbs,
    FLiSwAbs,
    FLiAddiAbs,
    FLiJalrAbs,
    /// Two such pairs back to back, each a byte load or store (see
    /// `program::fuse_li_base2`).
    FAbsSbSb,
    FAbsSbLbu,
    FAbsLbuSb,
    FAbsLbuLbu,
    // Triples: the same over three slots (the second and third stay as
    // they were).
    FLwLwBne,
    FLwLwBge,
    FLwLwMul,
    FSrliSlliOr,
    FAddiAddiBne,
    FMulAddAddi,
    FAddAddiBltu,
    FAddiMulSrli,
    FAddiAddiSb,
}

/// Instruction classes of the timing model.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Class {
    Alu,
    Load,
    Store,
    Branch,
    Jal,
    Jalr,
    Mul,
    MulH,
    Div,
    Csr,
    Ecall,
    Atomic,
    None,
}

impl Op {
    /// Ops after which the interpreter re-enters its block loop (control flow,
    /// traps, and counter reads, which must see exact counts).
    pub fn ends_block(self) -> bool {
        use Op::*;
        matches!(
            self,
            Jal | Jalr
                | Beq
                | Bne
                | Blt
                | Bge
                | Bltu
                | Bgeu
                | CvBeqImm
                | CvBneImm
                | Ecall
                | Ebreak
                | CsrRead
                | Illegal
                | NoExec
                | Goto
        )
    }

    pub fn class(self) -> Class {
        use Op::*;
        match self {
            Li | Addi | Slti | Sltiu | Xori | Ori | Andi | Slli | Srli | Srai | Add | Sub | Sll
            | Slt | Sltu | Xor | Srl | Sra | Or | And | Fence => Class::Alu,
            Lb | Lh | Lw | Lbu | Lhu => Class::Load,
            Sb | Sh | Sw => Class::Store,
            Beq | Bne | Blt | Bge | Bltu | Bgeu => Class::Branch,
            Jal => Class::Jal,
            Jalr => Class::Jalr,
            Mul => Class::Mul,
            Mulh | Mulhsu | Mulhu => Class::MulH,
            Div | Divu | Rem | Remu => Class::Div,
            CsrRead => Class::Csr,
            Ecall | Ebreak => Class::Ecall,
            LrW | ScW | AmoSwap | AmoAdd | AmoXor | AmoAnd | AmoOr | AmoMin | AmoMax | AmoMinu
            | AmoMaxu => Class::Atomic,
            Illegal | NoExec | Goto => Class::None,
            op => crate::corev::class(op),
        }
    }

    /// Conditional branches (base and CORE-V), whose `imm` is the target.
    pub fn is_branch(self) -> bool {
        use Op::*;
        matches!(
            self,
            Beq | Bne | Blt | Bge | Bltu | Bgeu | CvBeqImm | CvBneImm
        )
    }
}

/// One pre-decoded instruction (`Program::insts`; the interpreter runs a
/// compact copy, `program::SlotInst`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Inst {
    pub imm: i32,
    /// For JAL and branches: the decoder-cache slot of the target (so taken
    /// branches skip the pc lookup), or `NO_TARGET`.
    pub target: u32,
    /// Address of the next sequential instruction (links, resume points).
    pub next: u32,
    pub op: Op,
    pub rd: u8,
    pub rs1: u8,
    pub rs2: u8,
}

/// `Inst::target` when the target is not code (the jump then faults).
pub const NO_TARGET: u32 = u32::MAX;

impl Inst {
    pub const fn new(op: Op, rd: u8, rs1: u8, rs2: u8, imm: i32) -> Inst {
        Inst {
            imm,
            target: NO_TARGET,
            next: 0,
            op,
            rd: if rd == 0 { REG_SINK } else { rd },
            rs1,
            rs2,
        }
    }

    fn illegal(raw: u32) -> Inst {
        Inst {
            imm: raw as i32,
            target: NO_TARGET,
            next: 0,
            op: Op::Illegal,
            rd: REG_SINK,
            rs1: 0,
            rs2: 0,
        }
    }

    /// Fetch fault (end of an executable range).
    pub fn no_exec() -> Inst {
        Inst {
            imm: 0,
            target: NO_TARGET,
            next: 0,
            op: Op::NoExec,
            rd: REG_SINK,
            rs1: 0,
            rs2: 0,
        }
    }

    /// Continue at `target` (ends an out-of-line run that rejoins the main
    /// instruction stream).
    pub fn goto(target: u32) -> Inst {
        Inst {
            imm: target as i32,
            target: NO_TARGET,
            next: target,
            op: Op::Goto,
            rd: REG_SINK,
            rs1: 0,
            rs2: 0,
        }
    }

    /// Source registers this instruction reads (for the load-use hazard).
    /// CORE-V instructions read up to three (MAC accumulators, rs3 stores).
    pub fn reads(&self) -> [Option<u8>; 3] {
        use Op::*;
        match self.op {
            Li | Jal | Fence | Ecall | Ebreak | CsrRead | Illegal | NoExec | Goto => {
                [None, None, None]
            }
            Jalr | Lb | Lh | Lw | Lbu | Lhu | Addi | Slti | Sltiu | Xori | Ori | Andi | Slli
            | Srli | Srai | LrW => [Some(self.rs1), None, None],
            Beq | Bne | Blt | Bge | Bltu | Bgeu | Sb | Sh | Sw | Add | Sub | Sll | Slt | Sltu
            | Xor | Srl | Sra | Or | And | Mul | Mulh | Mulhsu | Mulhu | Div | Divu | Rem
            | Remu | ScW | AmoSwap | AmoAdd | AmoXor | AmoAnd | AmoOr | AmoMin | AmoMax
            | AmoMinu | AmoMaxu => [Some(self.rs1), Some(self.rs2), None],
            _ => crate::corev::reads(self),
        }
    }

    /// Destination register, if the instruction writes a real one.
    pub fn writes(&self) -> Option<u8> {
        if self.rd == REG_SINK || self.rd == 0 {
            None
        } else {
            Some(self.rd)
        }
    }
}

/// ABI register names (x0..x31), as disassemblers print them.
pub const REG_NAMES: [&str; 32] = [
    "zero", "ra", "sp", "gp", "tp", "t0", "t1", "t2", "s0", "s1", "a0", "a1", "a2", "a3", "a4",
    "a5", "a6", "a7", "s2", "s3", "s4", "s5", "s6", "s7", "s8", "s9", "s10", "s11", "t3", "t4",
    "t5", "t6",
];

pub(crate) fn reg_name(r: u8) -> &'static str {
    // The x0 sink is x0 to the reader.
    REG_NAMES.get(r as usize).copied().unwrap_or("zero")
}

impl Op {
    /// Assembler mnemonic of the base instruction (compressed forms print
    /// as their expansions; `Li` is LUI/AUIPC/C.LUI with the value folded).
    pub fn mnemonic(self) -> &'static str {
        use Op::*;
        match self {
            Li => "li",
            Jal => "jal",
            Jalr => "jalr",
            Beq => "beq",
            Bne => "bne",
            Blt => "blt",
            Bge => "bge",
            Bltu => "bltu",
            Bgeu => "bgeu",
            Lb => "lb",
            Lh => "lh",
            Lw => "lw",
            Lbu => "lbu",
            Lhu => "lhu",
            Sb => "sb",
            Sh => "sh",
            Sw => "sw",
            Addi => "addi",
            Slti => "slti",
            Sltiu => "sltiu",
            Xori => "xori",
            Ori => "ori",
            Andi => "andi",
            Slli => "slli",
            Srli => "srli",
            Srai => "srai",
            Add => "add",
            Sub => "sub",
            Sll => "sll",
            Slt => "slt",
            Sltu => "sltu",
            Xor => "xor",
            Srl => "srl",
            Sra => "sra",
            Or => "or",
            And => "and",
            Mul => "mul",
            Mulh => "mulh",
            Mulhsu => "mulhsu",
            Mulhu => "mulhu",
            Div => "div",
            Divu => "divu",
            Rem => "rem",
            Remu => "remu",
            Fence => "fence",
            Ecall => "ecall",
            Ebreak => "ebreak",
            CsrRead => "csrr",
            LrW => "lr.w",
            ScW => "sc.w",
            AmoSwap => "amoswap.w",
            AmoAdd => "amoadd.w",
            AmoXor => "amoxor.w",
            AmoAnd => "amoand.w",
            AmoOr => "amoor.w",
            AmoMin => "amomin.w",
            AmoMax => "amomax.w",
            AmoMinu => "amominu.w",
            AmoMaxu => "amomaxu.w",
            Illegal => "illegal",
            NoExec => "noexec",
            Goto => "goto",
            op => crate::corev::mnemonic(op),
        }
    }
}

/// Disassembly of the pre-decoded form (for fault reports and the decoder's
/// check against llvm-objdump): ABI register names, signed decimal
/// immediates, and absolute hex addresses where decoding folded the pc in
/// (`li` from LUI/AUIPC, JAL and branch targets).
impl std::fmt::Display for Inst {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        use Op::*;
        let m = self.op.mnemonic();
        let (rd, rs1, rs2) = (reg_name(self.rd), reg_name(self.rs1), reg_name(self.rs2));
        let imm = self.imm;
        match self.op {
            Li => write!(f, "{m} {rd}, 0x{:x}", imm as u32),
            Jal => write!(f, "{m} {rd}, 0x{:x}", imm as u32),
            Jalr | Lb | Lh | Lw | Lbu | Lhu => write!(f, "{m} {rd}, {imm}({rs1})"),
            Beq | Bne | Blt | Bge | Bltu | Bgeu => {
                write!(f, "{m} {rs1}, {rs2}, 0x{:x}", imm as u32)
            }
            Sb | Sh | Sw => write!(f, "{m} {rs2}, {imm}({rs1})"),
            Addi | Slti | Sltiu | Xori | Ori | Andi | Slli | Srli | Srai => {
                write!(f, "{m} {rd}, {rs1}, {imm}")
            }
            Add | Sub | Sll | Slt | Sltu | Xor | Srl | Sra | Or | And | Mul | Mulh | Mulhsu
            | Mulhu | Div | Divu | Rem | Remu => write!(f, "{m} {rd}, {rs1}, {rs2}"),
            Fence | Ecall | Ebreak | NoExec => f.write_str(m),
            CsrRead => write!(f, "{m} {rd}, 0x{:03x}", imm as u32),
            LrW => write!(f, "{m} {rd}, ({rs1})"),
            ScW | AmoSwap | AmoAdd | AmoXor | AmoAnd | AmoOr | AmoMin | AmoMax | AmoMinu
            | AmoMaxu => {
                write!(f, "{m} {rd}, {rs2}, ({rs1})")
            }
            Illegal => write!(f, "{m} 0x{:x}", imm as u32),
            Goto => write!(f, "{m} 0x{:x}", imm as u32),
            _ => crate::corev::fmt(self, f),
        }
    }
}

/// The length in bytes of the instruction whose low parcel is `lo`.
pub fn inst_len(lo: u16) -> u32 {
    if lo & 3 == 3 {
        4
    } else {
        2
    }
}

/// User-readable counter CSRs (Zicntr). Everything else is illegal in user mode.
pub mod csr {
    pub const CYCLE: u16 = 0xC00;
    pub const TIME: u16 = 0xC01;
    pub const INSTRET: u16 = 0xC02;
    pub const CYCLEH: u16 = 0xC80;
    pub const TIMEH: u16 = 0xC81;
    pub const INSTRETH: u16 = 0xC82;
    /// hpmcounter3..31 and their high halves read as zero.
    pub fn is_hpm(n: u16) -> bool {
        (0xC03..=0xC1F).contains(&n) || (0xC83..=0xC9F).contains(&n)
    }
}

#[inline]
pub(crate) fn bits(x: u32, hi: u32, lo: u32) -> u32 {
    (x >> lo) & ((1u32 << (hi - lo + 1)) - 1)
}

#[inline]
pub(crate) fn sext(x: u32, width: u32) -> i32 {
    let s = 32 - width;
    ((x << s) as i32) >> s
}

/// Decode a 32-bit instruction located at `pc`.
pub fn decode32(raw: u32, pc: u32) -> Inst {
    use Op::*;
    let rd = bits(raw, 11, 7) as u8;
    let rs1 = bits(raw, 19, 15) as u8;
    let rs2 = bits(raw, 24, 20) as u8;
    let f3 = bits(raw, 14, 12);
    let f7 = bits(raw, 31, 25);
    let imm_i = (raw as i32) >> 20;
    let imm_s = sext((bits(raw, 31, 25) << 5) | bits(raw, 11, 7), 12);
    let imm_b = sext(
        (bits(raw, 31, 31) << 12)
            | (bits(raw, 7, 7) << 11)
            | (bits(raw, 30, 25) << 5)
            | (bits(raw, 11, 8) << 1),
        13,
    );
    let imm_u = (raw & 0xFFFF_F000) as i32;
    let imm_j = sext(
        (bits(raw, 31, 31) << 20)
            | (bits(raw, 19, 12) << 12)
            | (bits(raw, 20, 20) << 11)
            | (bits(raw, 30, 21) << 1),
        21,
    );
    let ill = Inst::illegal(raw);
    let i = Inst::new;
    match raw & 0x7F {
        0x37 => i(Li, rd, 0, 0, imm_u),
        0x17 => i(Li, rd, 0, 0, pc.wrapping_add(imm_u as u32) as i32),
        0x6F => i(Jal, rd, 0, 0, pc.wrapping_add(imm_j as u32) as i32),
        0x67 if f3 == 0 => i(Jalr, rd, rs1, 0, imm_i),
        0x63 => {
            let op = match f3 {
                0 => Beq,
                1 => Bne,
                4 => Blt,
                5 => Bge,
                6 => Bltu,
                7 => Bgeu,
                _ => return ill,
            };
            i(op, 0, rs1, rs2, pc.wrapping_add(imm_b as u32) as i32)
        }
        0x03 => {
            let op = match f3 {
                0 => Lb,
                1 => Lh,
                2 => Lw,
                4 => Lbu,
                5 => Lhu,
                _ => return ill,
            };
            i(op, rd, rs1, 0, imm_i)
        }
        0x23 => {
            let op = match f3 {
                0 => Sb,
                1 => Sh,
                2 => Sw,
                _ => return ill,
            };
            i(op, 0, rs1, rs2, imm_s)
        }
        0x13 => {
            let op = match f3 {
                0 => Addi,
                2 => Slti,
                3 => Sltiu,
                4 => Xori,
                6 => Ori,
                7 => Andi,
                1 if f7 == 0 => return i(Slli, rd, rs1, 0, rs2 as i32),
                5 if f7 == 0 => return i(Srli, rd, rs1, 0, rs2 as i32),
                5 if f7 == 0x20 => return i(Srai, rd, rs1, 0, rs2 as i32),
                _ => return ill,
            };
            i(op, rd, rs1, 0, imm_i)
        }
        0x33 => {
            let op = match (f7, f3) {
                (0, 0) => Add,
                (0x20, 0) => Sub,
                (0, 1) => Sll,
                (0, 2) => Slt,
                (0, 3) => Sltu,
                (0, 4) => Xor,
                (0, 5) => Srl,
                (0x20, 5) => Sra,
                (0, 6) => Or,
                (0, 7) => And,
                (1, 0) => Mul,
                (1, 1) => Mulh,
                (1, 2) => Mulhsu,
                (1, 3) => Mulhu,
                (1, 4) => Div,
                (1, 5) => Divu,
                (1, 6) => Rem,
                (1, 7) => Remu,
                _ => return ill,
            };
            i(op, rd, rs1, rs2, 0)
        }
        // FENCE and FENCE.I: no-ops here (one in-order core per HPU, code is
        // immutable once decoded).
        0x0F if f3 == 0 || f3 == 1 => i(Fence, 0, 0, 0, 0),
        0x73 => {
            if f3 == 0 {
                return match raw {
                    0x0000_0073 => i(Ecall, 0, 0, 0, 0),
                    0x0010_0073 => i(Ebreak, 0, 0, 0, 0),
                    _ => ill, // mret, wfi, ...: privileged, illegal in user mode
                };
            }
            let n = (raw >> 20) as u16;
            let readable = matches!(
                n,
                csr::CYCLE | csr::TIME | csr::INSTRET | csr::CYCLEH | csr::TIMEH | csr::INSTRETH
            ) || csr::is_hpm(n);
            // CSRRS/CSRRC with rs1=x0 and CSRRSI/CSRRCI with uimm=0 only read;
            // anything that writes a read-only counter is illegal.
            let read_only = matches!(f3, 2 | 3 | 6 | 7) && rs1 == 0;
            if readable && read_only {
                i(CsrRead, rd, 0, 0, n as i32)
            } else {
                ill
            }
        }
        // CORE-V custom-0/1/2 (CV32E40P extensions: xcvmem, xcvalu, xcvbi,
        // xcvmac); custom-3 (xcvsimd) is not implemented and stays illegal.
        0x0B | 0x2B | 0x5B => crate::corev::decode(raw, pc).unwrap_or(ill),
        0x2F if f3 == 2 => {
            let op = match raw >> 27 {
                0x02 if rs2 == 0 => LrW,
                0x03 => ScW,
                0x01 => AmoSwap,
                0x00 => AmoAdd,
                0x04 => AmoXor,
                0x0C => AmoAnd,
                0x08 => AmoOr,
                0x10 => AmoMin,
                0x14 => AmoMax,
                0x18 => AmoMinu,
                0x1C => AmoMaxu,
                _ => return ill,
            };
            i(op, rd, rs1, rs2, 0)
        }
        _ => ill,
    }
}

/// Decode a 16-bit (RVC) instruction located at `pc`.
pub fn decode16(raw: u16, pc: u32) -> Inst {
    use Op::*;
    let x = raw as u32;
    let ill = Inst::illegal(x);
    let c = |op, rd: u32, rs1: u32, rs2: u32, imm: i32| {
        Inst::new(op, rd as u8, rs1 as u8, rs2 as u8, imm)
    };
    let f3 = bits(x, 15, 13);
    let rd_full = bits(x, 11, 7);
    let rs2_full = bits(x, 6, 2);
    let rdp = bits(x, 4, 2) + 8; // rd' / rs2'
    let rs1p = bits(x, 9, 7) + 8; // rs1' / rd'
    let imm6 = sext((bits(x, 12, 12) << 5) | bits(x, 6, 2), 6);
    match (x & 3, f3) {
        (0, 0) => {
            let nzuimm = (bits(x, 12, 11) << 4)
                | (bits(x, 10, 7) << 6)
                | (bits(x, 6, 6) << 2)
                | (bits(x, 5, 5) << 3);
            if nzuimm == 0 {
                return ill; // includes the all-zero parcel, defined illegal
            }
            c(Addi, rdp, 2, 0, nzuimm as i32)
        }
        (0, 2) | (0, 6) => {
            let off = (bits(x, 12, 10) << 3) | (bits(x, 6, 6) << 2) | (bits(x, 5, 5) << 6);
            if f3 == 2 {
                c(Lw, rdp, rs1p, 0, off as i32)
            } else {
                c(Sw, 0, rs1p, rdp, off as i32)
            }
        }
        (1, 0) => c(Addi, rd_full, rd_full, 0, imm6), // C.ADDI / C.NOP
        (1, 1) | (1, 5) => {
            let off = sext(
                (bits(x, 12, 12) << 11)
                    | (bits(x, 11, 11) << 4)
                    | (bits(x, 10, 9) << 8)
                    | (bits(x, 8, 8) << 10)
                    | (bits(x, 7, 7) << 6)
                    | (bits(x, 6, 6) << 7)
                    | (bits(x, 5, 3) << 1)
                    | (bits(x, 2, 2) << 5),
                12,
            );
            let link = if f3 == 1 { 1 } else { 0 };
            c(Jal, link, 0, 0, pc.wrapping_add(off as u32) as i32)
        }
        (1, 2) => c(Addi, rd_full, 0, 0, imm6),
        (1, 3) => {
            if rd_full == 2 {
                let nz = sext(
                    (bits(x, 12, 12) << 9)
                        | (bits(x, 6, 6) << 4)
                        | (bits(x, 5, 5) << 6)
                        | (bits(x, 4, 3) << 7)
                        | (bits(x, 2, 2) << 5),
                    10,
                );
                if nz == 0 {
                    return ill;
                }
                c(Addi, 2, 2, 0, nz)
            } else {
                if imm6 == 0 {
                    return ill;
                }
                c(Li, rd_full, 0, 0, imm6 << 12)
            }
        }
        (1, 4) => {
            let shamt = bits(x, 6, 2) as i32;
            match bits(x, 11, 10) {
                0 | 1 if bits(x, 12, 12) != 0 => ill, // shamt[5] must be 0 on RV32
                0 => c(Srli, rs1p, rs1p, 0, shamt),
                1 => c(Srai, rs1p, rs1p, 0, shamt),
                2 => c(Andi, rs1p, rs1p, 0, imm6),
                _ => {
                    if bits(x, 12, 12) != 0 {
                        return ill; // C.SUBW / C.ADDW are RV64
                    }
                    let op = match bits(x, 6, 5) {
                        0 => Sub,
                        1 => Xor,
                        2 => Or,
                        _ => And,
                    };
                    c(op, rs1p, rs1p, rdp, 0)
                }
            }
        }
        (1, 6) | (1, 7) => {
            let off = sext(
                (bits(x, 12, 12) << 8)
                    | (bits(x, 11, 10) << 3)
                    | (bits(x, 6, 5) << 6)
                    | (bits(x, 4, 3) << 1)
                    | (bits(x, 2, 2) << 5),
                9,
            );
            let op = if f3 == 6 { Beq } else { Bne };
            c(op, 0, rs1p, 0, pc.wrapping_add(off as u32) as i32)
        }
        (2, 0) => {
            if bits(x, 12, 12) != 0 {
                return ill;
            }
            c(Slli, rd_full, rd_full, 0, rs2_full as i32)
        }
        (2, 2) => {
            if rd_full == 0 {
                return ill;
            }
            let off = (bits(x, 12, 12) << 5) | (bits(x, 6, 4) << 2) | (bits(x, 3, 2) << 6);
            c(Lw, rd_full, 2, 0, off as i32)
        }
        (2, 4) => {
            let b12 = bits(x, 12, 12);
            match (b12, rd_full, rs2_full) {
                (0, 0, 0) => ill,
                (0, rs1, 0) => c(Jalr, 0, rs1, 0, 0),
                (0, rd, rs2) => c(Add, rd, 0, rs2, 0),
                (1, 0, 0) => c(Ebreak, 0, 0, 0, 0),
                (1, rs1, 0) => c(Jalr, 1, rs1, 0, 0),
                (_, rd, rs2) => c(Add, rd, rd, rs2, 0),
            }
        }
        (2, 6) => {
            let off = (bits(x, 12, 9) << 2) | (bits(x, 8, 7) << 6);
            c(Sw, 0, 2, rs2_full, off as i32)
        }
        _ => ill, // F/D loads and stores, reserved encodings
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rd_zero_goes_to_sink() {
        // addi x0, x0, 5
        let i = decode32(0x0050_0013, 0);
        assert_eq!(i.op, Op::Addi);
        assert_eq!(i.rd, REG_SINK);
    }

    #[test]
    fn auipc_and_branch_targets_are_folded() {
        // auipc a0, 0x1  at 0x1000 -> 0x2000
        let i = decode32(0x0000_1517, 0x1000);
        assert_eq!((i.op, i.rd, i.imm), (Op::Li, 10, 0x2000));
        // beq a0, a1, -4 at 0x100
        let b = decode32(0xFEB5_0EE3, 0x100);
        assert_eq!((b.op, b.imm), (Op::Beq, 0xFC));
        // jal ra, 8 at 0x10
        let j = decode32(0x0080_00EF, 0x10);
        assert_eq!((j.op, j.rd, j.imm), (Op::Jal, 1, 0x18));
    }

    #[test]
    fn compressed_forms() {
        assert_eq!(decode16(0x0001, 0).op, Op::Addi); // c.nop
        assert_eq!(decode16(0x0000, 0).op, Op::Illegal);
        assert_eq!(decode16(0x9002, 0).op, Op::Ebreak);
        let mv = decode16(0x852E, 0); // c.mv a0, a1
        assert_eq!((mv.op, mv.rd, mv.rs1, mv.rs2), (Op::Add, 10, 0, 11));
        let j = decode16(0xA001, 0x100); // c.j 0 -> self
        assert_eq!((j.op, j.rd, j.imm), (Op::Jal, REG_SINK, 0x100));
        let lwsp = decode16(0x4502, 0); // c.lwsp a0, 0(sp)
        assert_eq!((lwsp.op, lwsp.rd, lwsp.rs1, lwsp.imm), (Op::Lw, 10, 2, 0));
    }

    #[test]
    fn csr_writes_to_counters_are_illegal() {
        // csrr a0, cycle
        assert_eq!(decode32(0xC000_2573, 0).op, Op::CsrRead);
        // csrw cycle, a0
        assert_eq!(decode32(0xC005_1073, 0).op, Op::Illegal);
        // csrr a0, mstatus (machine CSR): illegal in user mode
        assert_eq!(decode32(0x3000_2573, 0).op, Op::Illegal);
    }
}
