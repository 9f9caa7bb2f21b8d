//! An sccache server of a test's own.
//!
//! A client that finds no server starts one and waits for it 10 seconds (fixed in the
//! distribution's 0.4; 0.19 reads `server_startup_timeout_ms` from its configuration file).
//! A loaded 2-core CI machine can take longer than that (stop 60: "Timed out waiting for
//! server startup"), which failed the compile. A server that already listens on
//! `SCCACHE_SERVER_PORT` is simply used, for both versions alike, so a test starts its server
//! in the foreground, waits for its port without a limit that tight, and stops it when
//! dropped.

use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A port nothing listens on now, the kernel's pick, for a server the test starts.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// How long a server may take to listen, on a machine as loaded as CI's can be.
const STARTUP: Duration = Duration::from_secs(120);

/// A running sccache server; dropping it stops the process.
pub struct Server {
    child: Child,
}

impl Server {
    /// Start `sccache` (the command holds the settings the server reads: `SCCACHE_DIR`,
    /// `SCCACHE_CONF`, logs, ...) as a server on `port`, and wait until it listens.
    pub fn start(mut sccache: Command, port: u16, label: &str) -> Server {
        sccache
            .env("SCCACHE_SERVER_PORT", port.to_string())
            .env("SCCACHE_START_SERVER", "1")
            .env("SCCACHE_NO_DAEMON", "1")
            .env_remove("SCCACHE_STARTUP_NOTIFY")
            .env_remove("RUSTC_WRAPPER")
            .stdin(Stdio::null())
            .stdout(Stdio::null());
        let mut server = Server {
            child: sccache.spawn().unwrap(),
        };
        let deadline = Instant::now() + STARTUP;
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            if let Some(status) = server.child.try_wait().unwrap() {
                panic!("{label}: the sccache server exited ({status}) before it listened");
            }
            assert!(
                Instant::now() < deadline,
                "{label}: the sccache server did not listen on port {port} within {} s",
                STARTUP.as_secs()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        server
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
