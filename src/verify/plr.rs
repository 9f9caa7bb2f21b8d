//! `nvdisasm -c -plr`: the toolkit's own per-register view of every instruction, read as the
//! independent oracle of what each instruction reads and writes (docs/DESIGN.md §The toolkit
//! oracle; docs/sass.md §`nvdisasm -plr` and the oracle).
//!
//! Each instruction line ends in a table with one group of cells per register file (`GPR`,
//! `PRED`, `UGPR`, `UPRED`); a header row names the register under each cell column (`-plr`
//! and `-lrm wide`: `# 0 1 2 ... 10 11`; `-lrm narrow`: one character per register, the
//! tens and hundreds in rows above, `# 0123456789012`). A cell
//! holds `^` (the instruction assigns the register), `v` (it uses it), `x` (both), `:` (live
//! through it) or a blank (dead). This module only parses that text: it shares nothing with
//! the operand tables of `sass`, so a wrong table entry cannot hide here.

use std::collections::{BTreeSet, HashMap};

use crate::sass::ir::Function;
use crate::sass::listing::Sections;

/// A register file of the `-plr` table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum File {
    Gpr,
    Pred,
    UGpr,
    UPred,
}

impl File {
    fn from_name(s: &str) -> Option<File> {
        match s {
            "GPR" => Some(File::Gpr),
            "PRED" => Some(File::Pred),
            "UGPR" => Some(File::UGpr),
            "UPRED" => Some(File::UPred),
            _ => None,
        }
    }

    /// How registers of this file are written in SASS.
    pub fn prefix(self) -> &'static str {
        match self {
            File::Gpr => "R",
            File::Pred => "P",
            File::UGpr => "UR",
            File::UPred => "UP",
        }
    }

    pub(crate) const ALL: [File; 4] = [File::Gpr, File::Pred, File::UGpr, File::UPred];

    /// The file's name in the table's header.
    pub fn name(self) -> &'static str {
        match self {
            File::Gpr => "GPR",
            File::Pred => "PRED",
            File::UGpr => "UGPR",
            File::UPred => "UPRED",
        }
    }
}

/// What one instruction does to one register file, as `-plr` marks it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Marks {
    /// `v` or `x`.
    pub reads: BTreeSet<u8>,
    /// `^` or `x`.
    pub writes: BTreeSet<u8>,
    /// Every non-blank cell (live into or through the instruction, or written by it).
    pub occupied: BTreeSet<u8>,
    /// The `#` column: registers of the file occupied there (blank: 0).
    pub count: u32,
}

/// One instruction's row: marks per file (a file absent from the table has no marks).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Row {
    pub files: HashMap<File, Marks>,
}

impl Row {
    pub fn marks(&self, f: File) -> Marks {
        self.files.get(&f).cloned().unwrap_or_default()
    }
}

/// A row's marks as the liveness analysis takes them for an instruction the operand tables
/// do not cover (`analysis::Liveness::compute_marked`).
pub fn marked(row: &Row) -> crate::analysis::Marked {
    use crate::analysis::RegFile;
    let mut m = crate::analysis::Marked::default();
    for (file, rf) in [
        (File::Gpr, RegFile::Gpr),
        (File::Pred, RegFile::Pred),
        (File::UGpr, RegFile::UGpr),
        (File::UPred, RegFile::UPred),
    ] {
        let marks = row.marks(file);
        for &r in marks.reads.union(&marks.writes) {
            m.mark(rf, r, marks.reads.contains(&r), marks.writes.contains(&r));
        }
    }
    m
}

/// The `-plr` listing of one cubin, with its section names.
#[derive(Debug, Clone, Default)]
pub struct Listing {
    pub(crate) rows: Rows,
    /// Section index → name.
    pub(crate) sections: Vec<String>,
}

/// Why `nvdisasm -plr`'s listing of a cubin could not be had.
#[derive(Debug, thiserror::Error)]
pub enum ListingError {
    /// The cubin could not be read, or nvdisasm not run (`path`: the file or the tool).
    #[error("{}: {source}", path.display())]
    Io {
        path: std::path::PathBuf,
        source: std::io::Error,
    },
    #[error(transparent)]
    Cubin(#[from] crate::cubin::CubinError),
    /// nvdisasm refused the cubin (its message).
    #[error("nvdisasm -plr: {0}")]
    Refused(String),
    #[error(transparent)]
    Listing(#[from] PlrError),
}

impl Listing {
    /// Run `nvdisasm -c -plr` on the cubin at `path` and read it.
    pub fn of_cubin(
        nvdisasm: &std::path::Path,
        path: &std::path::Path,
    ) -> Result<Listing, ListingError> {
        Listing::of_sections(nvdisasm, path, &Sections::Every)
    }

    /// [`Listing::of_cubin`] of the text sections `sections` only (the others have no rows).
    pub fn of_sections(
        nvdisasm: &std::path::Path,
        path: &std::path::Path,
        sections: &Sections,
    ) -> Result<Listing, ListingError> {
        let io = |path: &std::path::Path| {
            let path = path.to_path_buf();
            move |source| ListingError::Io { path, source }
        };
        let bytes = std::fs::read(path).map_err(io(path))?;
        let cubin = crate::cubin::Cubin::parse(&bytes)?;
        let args = Listing::args(sections);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = crate::process::listings::print(nvdisasm, &args, &bytes).map_err(io(nvdisasm))?;
        if !out.status.success() {
            return Err(ListingError::Refused(
                String::from_utf8_lossy(&out.stderr).trim().to_string(),
            ));
        }
        let rows = parse(&String::from_utf8_lossy(&out.stdout))?;
        let sections = cubin
            .elf()
            .sections
            .iter()
            .map(|s| s.name.clone())
            .collect();
        Ok(Listing { rows, sections })
    }

    /// nvdisasm's arguments for the listing of `sections` (the input path last, not here).
    pub fn args(sections: &Sections) -> Vec<String> {
        let mut args = sections.args();
        args.extend(["-c".to_string(), "-plr".to_string()]);
        args
    }

    /// The name of section `index` (empty if there is none).
    pub(crate) fn section(&self, index: usize) -> &str {
        self.sections.get(index).map_or("", String::as_str)
    }

    /// nvdisasm's marks for the instructions of `f` the operand tables do not cover, for
    /// `analysis::Liveness::compute_marked`.
    pub fn marked(&self, f: &Function) -> HashMap<u64, crate::analysis::Marked> {
        let section = self.section(f.section);
        f.instrs
            .iter()
            .filter(|i| i.unknown)
            .filter_map(|i| {
                let row = self.rows.get(&(section.to_string(), i.offset))?;
                Some((i.offset, marked(row)))
            })
            .collect()
    }
}

/// Rows of a listing, keyed by (text section name, instruction offset).
pub(crate) type Rows = HashMap<(String, u64), Row>;

/// The listing could not be read as a `-plr` table.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("nvdisasm -plr listing: {0}")]
pub struct PlrError(pub String);

/// One group of the table: its file and (column, register) pairs.
#[derive(Debug, Clone)]
struct Group {
    file: File,
    /// Byte span of the group inside the table part of a line.
    span: (usize, usize),
    /// Column (relative to the line's table start) of each register's marker.
    cols: Vec<(usize, u8)>,
}

/// The table part of a line: what follows `// ` where the first `|` or `+` opens it.
fn table_part(line: &str) -> Option<(usize, &str)> {
    let at = line.find("// |").or_else(|| line.find("// +"))?;
    Some((at + 3, &line[at + 3..]))
}

/// Byte spans between `|` separators of a table part.
fn cells(part: &str) -> Vec<(usize, usize)> {
    let bars: Vec<usize> = part.match_indices('|').map(|(i, _)| i).collect();
    bars.windows(2).map(|w| (w[0] + 1, w[1])).collect()
}

/// Parse a whole `nvdisasm -c -plr` listing.
pub fn parse(text: &str) -> Result<Rows, PlrError> {
    let mut out = Rows::new();
    let mut at = Header::default();
    for line in text.lines() {
        let t = line.trim_start();
        if let Some(rest) = t
            .strip_prefix(".section")
            .filter(|r| r.starts_with([' ', '\t']))
        {
            at = Header {
                section: rest
                    .trim()
                    .split(',')
                    .next()
                    .unwrap_or("")
                    .trim()
                    .to_string(),
                ..Header::default()
            };
            continue;
        }
        let Some((_, part)) = table_part(line) else {
            continue;
        };
        if at.read_header(part)? {
            continue;
        }
        // An instruction line: `/*0140*/  OPCODE ... ;  // | cells |`.
        let Some(off) = instruction_offset(t) else {
            continue;
        };
        if at.groups.is_empty() {
            return Err(PlrError(format!(
                "{}: instruction {off:#x} before any register header",
                at.section
            )));
        }
        let row = at.row(part, off)?;
        out.insert((at.section.clone(), off), row);
    }
    Ok(out)
}

/// What the headers of the current section said.
#[derive(Debug, Default)]
struct Header {
    section: String,
    names: Vec<File>,
    groups: Vec<Group>,
    /// `-lrm narrow`: the header rows between the file names and the `#` row (tens and
    /// hundreds of each register column).
    upper: Vec<String>,
}

impl Header {
    /// Take table part `part` if it is a header row (true), else leave it (false).
    fn read_header(&mut self, part: &str) -> Result<bool, PlrError> {
        let spans = cells(part);
        // The file-name header: `|   GPR   | PRED   |   UGPR  |`.
        let files: Vec<Option<File>> = spans
            .iter()
            .map(|&(a, b)| File::from_name(part[a..b].trim()))
            .collect();
        if !files.is_empty() && files.iter().all(Option::is_some) {
            self.names = files.into_iter().flatten().collect();
            self.groups.clear();
            self.upper.clear();
            return Ok(true);
        }
        // The register-number header: `|  # 0 1 2 ... 11  |  # 0  |`.
        if !spans.is_empty()
            && spans
                .iter()
                .all(|&(a, b)| part[a..b].trim_start().starts_with('#'))
        {
            if self.names.len() != spans.len() {
                return Err(PlrError(format!(
                    "{}: {} register-number groups under {} file names",
                    self.section,
                    spans.len(),
                    self.names.len()
                )));
            }
            self.groups = spans
                .iter()
                .zip(&self.names)
                .map(|(&span, &file)| {
                    Ok(Group {
                        file,
                        span,
                        cols: columns(part, span, &self.upper)?,
                    })
                })
                .collect::<Result<_, PlrError>>()?;
            self.upper.clear();
            return Ok(true);
        }
        if self.groups.is_empty() && !self.names.is_empty() {
            self.upper.push(part.to_string());
            return Ok(true);
        }
        Ok(false)
    }

    /// The marks of instruction `off`'s table part `part`, per register file.
    fn row(&self, part: &str, off: u64) -> Result<Row, PlrError> {
        let mut row = Row::default();
        for g in &self.groups {
            let m = self.marks(g, part, off)?;
            row.files.insert(g.file, m);
        }
        Ok(row)
    }

    fn marks(&self, g: &Group, part: &str, off: u64) -> Result<Marks, PlrError> {
        let bytes = part.as_bytes();
        let mut m = Marks::default();
        let first = g.cols.first().map_or(g.span.1, |c| c.0).min(g.span.1);
        m.count = part
            .get(g.span.0..first)
            .and_then(|c| c.trim().parse().ok())
            .unwrap_or(0);
        for &(col, r) in &g.cols {
            if col < g.span.0 || col >= g.span.1 {
                continue;
            }
            match bytes.get(col).copied().unwrap_or(b' ') {
                b' ' => continue,
                b'v' => {
                    m.reads.insert(r);
                }
                b'^' => {
                    m.writes.insert(r);
                }
                b'x' => {
                    m.reads.insert(r);
                    m.writes.insert(r);
                }
                b':' => {}
                c => {
                    return Err(PlrError(format!(
                        "{} {off:#x}: unknown cell mark {:?} for {}{r}",
                        self.section,
                        c as char,
                        g.file.prefix()
                    )));
                }
            }
            m.occupied.insert(r);
        }
        Ok(m)
    }
}

/// The offset of an instruction line `/*0140*/ ...`.
fn instruction_offset(t: &str) -> Option<u64> {
    let (hex, _) = t.strip_prefix("/*")?.split_once("*/")?;
    u64::from_str_radix(hex.trim(), 16).ok()
}

/// The (column, register) of each register of the `#` row's cell `span` of `part`. A column
/// whose number names no register (past 255) makes the table unreadable: dropping it would
/// read that register as never live, which the proofs would trust.
fn columns(
    part: &str,
    (a, b): (usize, usize),
    upper: &[String],
) -> Result<Vec<(usize, u8)>, PlrError> {
    let cell = &part[a..b];
    let hash = cell.find('#').unwrap_or(0);
    // Wide numbers its first column `0` alone; narrow runs the units together.
    let narrow = cell[hash + 1..]
        .split_whitespace()
        .next()
        .is_some_and(|w| w.len() > 1);
    let numbered = if narrow {
        narrow_columns(cell, a, hash, upper)
    } else {
        wide_columns(cell, a, hash)
    };
    numbered
        .into_iter()
        .map(|(col, n)| {
            u8::try_from(n)
                .map(|r| (col, r))
                .map_err(|_| PlrError(format!("register column {n}: no register has that number")))
        })
        .collect()
}

/// `-lrm narrow`: one digit per column, the tens and hundreds in the rows above. Counted
/// without overflow (the `nvdisasm_listing` fuzz target found a panic under many rows).
fn narrow_columns(cell: &str, a: usize, hash: usize, upper: &[String]) -> Vec<(usize, u32)> {
    let mut cols = Vec::new();
    for (i, &c) in cell.as_bytes().iter().enumerate().skip(hash + 1) {
        if !c.is_ascii_digit() {
            continue;
        }
        // The digits above this column, blank meaning none.
        let mut n = 0u32;
        for row in upper {
            if let Some(d) = row.as_bytes().get(a + i).filter(|d| d.is_ascii_digit()) {
                n = n.saturating_mul(10).saturating_add(u32::from(d - b'0'));
            }
        }
        cols.push((
            a + i,
            n.saturating_mul(10).saturating_add(u32::from(c - b'0')),
        ));
    }
    cols
}

/// `-plr`'s wide layout: whole numbers, the marker under each number's last digit.
fn wide_columns(cell: &str, a: usize, hash: usize) -> Vec<(usize, u32)> {
    let bytes = cell.as_bytes();
    let mut cols = Vec::new();
    let mut i = hash + 1;
    while i < bytes.len() {
        if bytes[i].is_ascii_digit() {
            let s = i;
            while i < bytes.len() && bytes[i].is_ascii_digit() {
                i += 1;
            }
            cols.push((a + i - 1, cell[s..i].parse::<u32>().unwrap_or(u32::MAX)));
        } else {
            i += 1;
        }
    }
    cols
}

#[cfg(test)]
mod tests {
    use super::*;

    // Lines as nvdisasm 13.5 prints them (sm_80, an ldmatrix + mma kernel).
    const LISTING: &str = "\t.section\t.text._Z1kPv,\"ax\",@progbits
\t.sectioninfo\t@\"SHI_REGISTERS=14\"
                                                                                   // +-------------------------------+--------+----------------+
                                                                                   // |             GPR               | PRED   |     UGPR       |
                                                                                   // |  # 0 1 2 3 4 5 6 7 8 9 10 11  |  # 0   | # 0 1 2 3 4 5  |
                                                                                   // +-------------------------------+--------+----------------+
        /*0070*/               @P0 BRA `(.L_x_1) ;                                 // |  3   :         : :            |  1 v   | 2         : :  |
        /*0140*/                   LDSM.16.MT88.2 R2, [R6+0x200] ;                 // |  5   : ^ ^     v :            |        | 2         : :  |
        /*0150*/                   LDSM.16.M88.4 R8, [R6] ;                        // |  9   : : :     v : ^ ^  ^  ^  |        | 2         : :  |
        /*0160*/                   HMMA.16816.F32 R8, R8, R2, RZ ;                 // |  8   : v v       : x x  x  x  |        | 2         : :  |
        /*01a0*/                   STG.E [R2.64], R8 ;                             // |  7   : v v         v :  :  :  |        | 2         v v  |
";

    #[test]
    fn reads_every_file_and_wide_columns() {
        let rows = parse(LISTING).unwrap();
        let row = |off| rows[&(".text._Z1kPv".to_string(), off)].clone();
        let set = |v: &[u8]| v.iter().copied().collect::<BTreeSet<u8>>();
        assert_eq!(row(0x150).marks(File::Gpr).writes, set(&[8, 9, 10, 11]));
        assert_eq!(row(0x150).marks(File::Gpr).reads, set(&[6]));
        assert_eq!(row(0x140).marks(File::Gpr).writes, set(&[2, 3]));
        let h = row(0x160).marks(File::Gpr);
        assert_eq!(h.reads, set(&[2, 3, 8, 9, 10, 11]));
        assert_eq!(h.writes, set(&[8, 9, 10, 11]));
        assert_eq!(row(0x70).marks(File::Pred).reads, set(&[0]));
        assert_eq!(row(0x1a0).marks(File::UGpr).reads, set(&[4, 5]));
        assert!(row(0x1a0).marks(File::UGpr).writes.is_empty());
        assert_eq!(
            row(0x1a0).marks(File::Gpr).occupied,
            set(&[1, 2, 3, 8, 9, 10, 11])
        );
    }

    // The same rows as `nvdisasm -c -lrm narrow` prints them: one character per register,
    // the tens in the row above the `#` row.
    const NARROW: &str = "	.section	.text._Z1kPv,\"ax\",@progbits
	.sectioninfo	@\"SHI_REGISTERS=14\"
                                                                                   // +------------------+-------+------------+
                                                                                   // |      GPR         |  PRED |  UGPR      |
                                                                                   // |                  |       |            |
                                                                                   // |    000000000011  |       |            |
                                                                                   // |  # 012345678901  |  # 0  |  # 012345  |
                                                                                   // +------------------+-------+------------+
        /*0070*/               @P0 BRA `(.L_x_1) ;                                 // |  3  :    ::      |  1 v  |  2     ::  |
        /*0140*/                   LDSM.16.MT88.2 R2, [R6+0x200] ;                 // |  5  :^^  v:      |       |  2     ::  |
        /*0150*/                   LDSM.16.M88.4 R8, [R6] ;                        // |  9  :::  v:^^^^  |       |  2     ::  |
        /*0160*/                   HMMA.16816.F32 R8, R8, R2, RZ ;                 // |  8  :vv   :xxxx  |       |  2     ::  |
        /*01a0*/                   STG.E [R2.64], R8 ;                             // |  7  :vv    v:::  |       |  2     vv  |
";

    #[test]
    fn narrow_layout_reads_as_wide() {
        assert_eq!(parse(NARROW).unwrap(), parse(LISTING).unwrap());
        // Hundreds in a row of their own: 128 columns, R100 read and R127 written.
        let digits = |f: fn(u32) -> u32| -> String {
            (0..128u32)
                .map(|r| char::from_digit(f(r), 10).unwrap_or(' '))
                .collect()
        };
        let mut cells = vec![b' '; 128];
        cells[1] = b':';
        cells[100] = b'v';
        cells[127] = b'^';
        let cells = String::from_utf8(cells).unwrap();
        let text = format!(
            "\t.section\t.text.k,\"ax\",@progbits\n\
             // |   GPR{0:128}|\n\
             // |     {1}  |\n\
             // |     {2}  |\n\
             // |   # {3}  |\n\
             /*0010*/ FADD R127, R100, 1 ; // |   3 {cells}  |\n",
            "",
            digits(|r| r / 100),
            digits(|r| r / 10 % 10),
            digits(|r| r % 10),
        );
        let rows = parse(&text).unwrap();
        let m = rows[&(".text.k".to_string(), 0x10)].marks(File::Gpr);
        assert_eq!(m.count, 3);
        assert_eq!(m.reads, BTreeSet::from([100]));
        assert_eq!(m.writes, BTreeSet::from([127]));
        assert_eq!(m.occupied, BTreeSet::from([1, 100, 127]));
        // A column number past any register (twelve digit rows above it, or a wide number
        // past 255) makes the table unreadable, never a register read as not live; before,
        // the narrow count overflowed (the `nvdisasm_listing` fuzz target).
        let nines = format!("// |     {}  |\n", "9".repeat(128));
        let deep = text.replacen("// |   # ", &format!("{}// |   # ", nines.repeat(12)), 1);
        assert_ne!(deep, text);
        assert!(
            parse(&deep)
                .unwrap_err()
                .0
                .contains("no register has that number")
        );
        let past = LISTING.replacen(" 10 11  |", " 10 256  |", 1);
        assert_ne!(past, LISTING);
        assert!(parse(&past).unwrap_err().0.contains("register column 256"));
    }

    #[test]
    fn malformed_listings_are_errors_not_panics() {
        assert!(parse("        /*0000*/ NOP ; // | 1 : |").is_err());
        assert!(LISTING.contains("|  1 v   |"));
        let bad_mark = LISTING.replace("|  1 v   |", "|  1 ?   |");
        assert!(parse(&bad_mark).is_err());
        assert!(parse("").unwrap().is_empty());
        // Truncated lines and stray bars parse or fail, never panic.
        for cut in 0..LISTING.len() {
            if LISTING.is_char_boundary(cut) {
                let _ = parse(&LISTING[..cut]);
            }
        }
    }
}
