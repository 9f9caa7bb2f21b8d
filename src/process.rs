//! Running one replayed step as nvcc's `sh -c` would: same environment, program found on the
//! step's PATH, argv[0] as printed, output captured so nothing is shown unless the whole
//! replay succeeds. Below both the driver, which runs every step of a replay this way, and
//! the tuner, which runs ptxas's variants the same way: the driver hands ptxas steps down to
//! `tune::ptxas_step`, and nothing here knows either (docs/DESIGN.md). The toolkit readers'
//! listings of a cubin, run once per process and shared by the proof and the assembly check,
//! are [`listings`].

pub mod listings;

use std::ffi::OsString;
use std::io::{Read, Seek};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Command, ExitStatus, Stdio};

/// What a step printed and how it ended.
#[derive(Debug)]
pub struct Captured {
    pub status: ExitStatus,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
}

impl Captured {
    /// Add `nvcc-orion: warning: <what>` to what the step printed, on a line of its own
    /// (a tool's last message may lack its newline).
    pub fn warn(&mut self, what: &str) {
        if self.stderr.last().is_some_and(|&b| b != b'\n') {
            self.stderr.push(b'\n');
        }
        self.stderr
            .extend_from_slice(format!("nvcc-orion: warning: {what}\n").as_bytes());
    }
}

/// The environment every step of one replay runs in.
#[derive(Debug, Clone)]
pub struct StepContext {
    /// The complete environment of a step: nvcc's own plus the dry run's assignments.
    pub env: Vec<(OsString, OsString)>,
    /// Where the user ran nvcc.
    pub cwd: PathBuf,
}

impl StepContext {
    fn path_var(&self) -> Option<&OsString> {
        self.env
            .iter()
            .rev()
            .find(|(k, _)| k == "PATH")
            .map(|(_, v)| v)
    }

    /// Resolve `argv[0]` like the shell: a name with a slash is a path, else search PATH.
    pub(crate) fn resolve(&self, program: &str) -> std::io::Result<PathBuf> {
        if program.contains('/') {
            return Ok(PathBuf::from(program));
        }
        which::which_in(program, self.path_var(), &self.cwd).map_err(|e| {
            std::io::Error::new(std::io::ErrorKind::NotFound, format!("{program}: {e}"))
        })
    }

    /// Run `argv` to completion, capturing its output.
    pub(crate) fn run(&self, argv: &[String]) -> std::io::Result<Captured> {
        let (program, args) = argv.split_first().ok_or_else(|| {
            std::io::Error::new(std::io::ErrorKind::InvalidInput, "empty command")
        })?;
        let out = Command::new(self.resolve(program)?)
            .arg0(program)
            .args(args)
            .env_clear()
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .current_dir(&self.cwd)
            .stdin(Stdio::inherit())
            .output()?;
        Ok(Captured {
            status: out.status,
            stdout: out.stdout,
            stderr: out.stderr,
        })
    }
}

/// Run `cmd` to completion with its standard output going to an unnamed temporary file
/// (deleted by the system once closed, whatever happens here), read back once at the end;
/// its error output is captured as by [`Command::output`]. For the toolkit's readers
/// (`cuobjdump`, `nvdisasm`), which write unbuffered: through a pipe every small write
/// wakes the reader, about 0.02-0.03 s of the reader's CPU per `cuobjdump -elf` of a module
/// (bench/results/build.md), where a file costs it one read. The file is in memory
/// (`/dev/shm`) where there is one: on a disk file system each small write also updates the
/// file's times, which cost the tool as much as the pipe cost us.
pub fn output_via_file(cmd: &mut Command) -> std::io::Result<Captured> {
    let mut file = tempfile::tempfile_in("/dev/shm").or_else(|_| tempfile::tempfile())?;
    let out = cmd
        .stdin(Stdio::null())
        .stdout(file.try_clone()?)
        .stderr(Stdio::piped())
        .output()?;
    let mut stdout = Vec::new();
    file.rewind()?;
    file.read_to_end(&mut stdout)?;
    Ok(Captured {
        status: out.status,
        stdout,
        stderr: out.stderr,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tool_prints_to_a_file_read_back_whole() {
        let mut cmd = Command::new("sh");
        cmd.args([
            "-c",
            "if [ -f /proc/self/fd/1 ]; then echo file; else echo pipe; fi; \
             i=0; while [ $i -lt 300 ]; do printf x; i=$((i+1)); done; echo oops >&2; exit 3",
        ]);
        let out = output_via_file(&mut cmd).expect("sh runs");
        let text = String::from_utf8(out.stdout).unwrap();
        assert_eq!(text, format!("file\n{}", "x".repeat(300)));
        assert_eq!(out.stderr, b"oops\n");
        assert_eq!(out.status.code(), Some(3));
    }
}
