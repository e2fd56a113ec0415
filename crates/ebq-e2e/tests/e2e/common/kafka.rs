//! A real Apache Kafka broker for the `kafka` tests: one KRaft node
//! (broker and controller) on 127.0.0.1, free ports, its log dirs in a temp
//! dir; killed and removed on Drop.
//!
//! The jars come from Maven Central through `crates/ebq-e2e/kafka/pom.xml`
//! (Kafka 4.4.0, its tools, log4j) into `target/kafka-jars` on first use: a
//! rebuildable directory, fetched again when missing. Needs `java` (17) and
//! `mvn` (scripts/setup.sh installs default-jre-headless and maven).

use super::{free_port, wait_for};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The directory of the broker's jars, fetched with Maven when missing.
pub fn jars() -> &'static Path {
    static JARS: OnceLock<PathBuf> = OnceLock::new();
    JARS.get_or_init(|| {
        let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
        let exe = std::env::current_exe().expect("test binary path");
        // target/<profile>/deps/e2e-HASH → target
        let target = exe.ancestors().nth(3).expect("target dir").to_path_buf();
        let dir = target.join("kafka-jars");
        let marker = dir.join("kafka_2.13-4.4.0.jar");
        if !marker.exists() {
            let partial = target.join(format!("kafka-jars.partial-{}", std::process::id()));
            let out = Command::new("mvn")
                .args(["-q", "-f"])
                .arg(manifest.join("kafka/pom.xml"))
                .arg("dependency:copy-dependencies")
                .arg(format!("-DoutputDirectory={}", partial.display()))
                .output()
                .expect("mvn must be installed (scripts/setup.sh installs maven)");
            assert!(
                out.status.success(),
                "mvn could not fetch Kafka's jars:\n{}",
                String::from_utf8_lossy(&out.stdout)
            );
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::rename(&partial, &dir).unwrap();
        }
        dir
    })
}

/// `java -cp JARS/* MAIN ARGS…`, with log4j writing INFO to stderr.
fn java(dir: &Path, main: &str) -> Command {
    let mut cmd = Command::new("java");
    cmd.arg("-Xmx512m")
        .arg(format!("-Dlog4j2.configurationFile={}", dir.join("log4j2.properties").display()))
        .arg("-cp")
        .arg(format!("{}/*", jars().display()))
        .arg(main);
    cmd
}

/// One running KRaft broker.
pub struct Broker {
    dir: PathBuf,
    /// The client port.
    pub port: u16,
    child: Option<Child>,
    /// Times the broker was started (its log file's name).
    starts: u32,
    /// How long the last start took until the broker said it was started.
    pub started_in: Duration,
}

impl Broker {
    /// Formats a new log dir and starts the broker; returns once it has
    /// started and takes connections.
    pub fn start() -> Broker {
        let dir = std::env::temp_dir().join(format!("ebq-kafka-{}-{}", std::process::id(), super::unique()));
        std::fs::create_dir_all(&dir).unwrap();
        let (port, controller) = (free_port(), free_port());
        let props = format!(
            "process.roles=broker,controller\n\
             node.id=1\n\
             controller.quorum.voters=1@127.0.0.1:{controller}\n\
             listeners=PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controller}\n\
             advertised.listeners=PLAINTEXT://127.0.0.1:{port}\n\
             controller.listener.names=CONTROLLER\n\
             listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT\n\
             inter.broker.listener.name=PLAINTEXT\n\
             log.dirs={}\n\
             num.partitions=1\n\
             default.replication.factor=1\n\
             offsets.topic.replication.factor=1\n\
             transaction.state.log.replication.factor=1\n\
             transaction.state.log.min.isr=1\n\
             group.initial.rebalance.delay.ms=0\n",
            dir.join("logs").display()
        );
        std::fs::write(dir.join("server.properties"), props).unwrap();
        std::fs::write(
            dir.join("log4j2.properties"),
            "status = error\nappender.out.type = Console\nappender.out.name = out\nappender.out.target = SYSTEM_ERR\n\
             appender.out.layout.type = PatternLayout\nappender.out.layout.pattern = [%d] %p %m (%c)%n\n\
             rootLogger.level = info\nrootLogger.appenderRef.out.ref = out\n",
        )
        .unwrap();
        let id = java(&dir, "kafka.tools.StorageTool").arg("random-uuid").output().unwrap();
        assert!(id.status.success(), "StorageTool random-uuid: {}", String::from_utf8_lossy(&id.stderr));
        let id = String::from_utf8_lossy(&id.stdout).lines().last().unwrap_or_default().trim().to_string();
        let format = java(&dir, "kafka.tools.StorageTool")
            .args(["format", "-t", &id, "-c"])
            .arg(dir.join("server.properties"))
            .output()
            .unwrap();
        assert!(format.status.success(), "StorageTool format: {}", String::from_utf8_lossy(&format.stderr));
        let mut b = Broker { dir, port, child: None, starts: 0, started_in: Duration::ZERO };
        b.restart();
        b
    }

    /// `127.0.0.1:PORT`.
    pub fn bootstrap(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// Starts the broker (again) on its log dir; returns once it has started.
    pub fn restart(&mut self) {
        assert!(self.child.is_none(), "the broker runs already");
        self.starts += 1;
        let log = self.dir.join(format!("broker-{}.log", self.starts));
        let out = std::fs::File::create(&log).unwrap();
        let t = Instant::now();
        let child = java(&self.dir, "kafka.Kafka")
            .arg(self.dir.join("server.properties"))
            .stdout(out.try_clone().unwrap())
            .stderr(out)
            .stdin(Stdio::null())
            .spawn()
            .expect("java must be installed (scripts/setup.sh installs default-jre-headless)");
        self.child = Some(child);
        wait_for(120, "the Kafka broker to start", || {
            if let Some(status) = self.child.as_mut().and_then(|c| c.try_wait().unwrap()) {
                panic!("the broker exited ({status}):\n{}", std::fs::read_to_string(&log).unwrap_or_default());
            }
            let text = std::fs::read_to_string(&log).unwrap_or_default();
            (text.contains("Kafka Server started") && std::net::TcpStream::connect(("127.0.0.1", self.port)).is_ok())
                .then_some(())
        });
        self.started_in = t.elapsed();
    }

    /// Kills the broker (SIGKILL: no clean shutdown) and waits for it.
    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// SIGSTOP (`true`) or SIGCONT (`false`): a broker that hangs, its
    /// connections open and unanswered.
    pub fn pause(&self, stop: bool) {
        let pid = self.child.as_ref().expect("the broker runs").id();
        // SAFETY: signalling our own child.
        unsafe { libc::kill(pid as i32, if stop { libc::SIGSTOP } else { libc::SIGCONT }) };
    }

    /// Creates `topic` with one partition (so its messages keep their order).
    pub fn create_topic(&self, topic: &str) {
        let out = java(&self.dir, "org.apache.kafka.tools.TopicCommand")
            .args(["--bootstrap-server", &self.bootstrap(), "--create", "--topic", topic])
            .args(["--partitions", "1", "--replication-factor", "1"])
            .output()
            .unwrap();
        assert!(out.status.success(), "TopicCommand --create {topic}: {}", String::from_utf8_lossy(&out.stderr));
    }

    /// Every message of `topic` as (key, value), read with Kafka's own
    /// ConsoleConsumer from the beginning: `expected` of them, or what came
    /// before 20 s passed without a message.
    pub fn console_consume(&self, topic: &str, expected: usize) -> Vec<(String, String)> {
        let out = java(&self.dir, "org.apache.kafka.tools.consumer.ConsoleConsumer")
            .args(["--bootstrap-server", &self.bootstrap(), "--topic", topic, "--from-beginning"])
            .args(["--max-messages", &expected.to_string(), "--timeout-ms", "20000"])
            .args(["--formatter-property", "print.key=true", "--formatter-property", "key.separator=\t"])
            .stderr(Stdio::null())
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|l| l.split_once('\t'))
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }
}

impl Drop for Broker {
    fn drop(&mut self) {
        if let Some(c) = &self.child {
            // A paused broker dies of SIGKILL as well; SIGCONT anyway.
            // SAFETY: signalling our own child.
            unsafe { libc::kill(c.id() as i32, libc::SIGCONT) };
        }
        self.kill();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
