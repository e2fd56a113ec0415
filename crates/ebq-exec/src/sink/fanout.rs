//! One query's results into several sinks (`--sink - --sink F.parquet …`).
//!
//! The kernel program, the ring drain and the decode run once; each decoded
//! batch goes to every sink (an [`Output`] clone shares its Arrow buffers).
//! Every sink runs on its own writer thread behind its own bounded queue
//! that drops when full ([`WhenFull::Drop`]): a slow sink (a terminal, a
//! full disk) loses its own rows, counted per sink ([`FanOut::counts`]),
//! and never holds up the other sinks or the drain of the rings.

use super::queued::{QueueCounts, QueuedSink, WhenFull};
use super::Sink;
use crate::Output;
use std::io;

/// Several sinks fed the same batches.
pub struct FanOut {
    sinks: Vec<(String, QueuedSink)>,
}

impl FanOut {
    /// Starts a writer thread per sink, each with a queue of `bound` bytes;
    /// `name` is what the stats line calls the sink (its `--sink` spec).
    pub fn spawn(sinks: Vec<(String, Box<dyn Sink + Send>)>, bound: usize) -> io::Result<FanOut> {
        let sinks = sinks
            .into_iter()
            .map(|(name, s)| QueuedSink::spawn_with(s, bound, WhenFull::Drop).map(|q| (name, q)))
            .collect::<io::Result<_>>()?;
        Ok(FanOut { sinks })
    }

    /// Per sink, by name: rows written and rows dropped (final after `finish`).
    pub fn counts(&self) -> Vec<(String, QueueCounts)> {
        self.sinks.iter().map(|(name, q)| (name.clone(), q.counts())).collect()
    }
}

impl Sink for FanOut {
    /// Queues `out` for every sink; a sink's write error (a closed pipe, a
    /// full disk) ends the run, as it does with one sink.
    fn write(&mut self, out: &Output) -> io::Result<()> {
        for (name, s) in &mut self.sinks {
            s.write(out).map_err(|e| io::Error::new(e.kind(), format!("sink {name}: {e}")))?;
        }
        Ok(())
    }

    /// Finishes every sink (each writes what it queued, then its footer);
    /// the first error after all have finished.
    fn finish(&mut self) -> io::Result<()> {
        let mut first = Ok(());
        for (name, s) in &mut self.sinks {
            if let Err(e) = s.finish() {
                if first.is_ok() {
                    first = Err(io::Error::new(e.kind(), format!("sink {name}: {e}")));
                }
            }
        }
        first
    }

    fn counts(&self) -> Vec<(String, QueueCounts)> {
        FanOut::counts(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::WindowBounds;
    use arrow_array::{RecordBatch, UInt64Array};
    use arrow_schema::{DataType, Field, Schema};
    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    fn output(first: u64, n: u64) -> Output {
        let schema = Arc::new(Schema::new(vec![Field::new("n", DataType::UInt64, false)]));
        let batch = RecordBatch::try_new(schema, vec![Arc::new(UInt64Array::from_iter_values(first..first + n))]);
        Output { window: WindowBounds::Rows, batch: batch.unwrap(), partial: false, extras: vec![] }
    }

    /// Collects rows; `stall` makes every write wait until it is released.
    struct Collect {
        rows: Arc<Mutex<u64>>,
        stall: Option<Arc<Mutex<()>>>,
    }

    impl Sink for Collect {
        fn write(&mut self, out: &Output) -> io::Result<()> {
            if let Some(s) = &self.stall {
                drop(s.lock().unwrap());
            }
            *self.rows.lock().unwrap() += out.batch.num_rows() as u64;
            Ok(())
        }
    }

    #[test]
    fn a_stalled_sink_drops_its_own_rows_and_the_others_get_every_row() {
        let (fast_rows, slow_rows) = (Arc::new(Mutex::new(0)), Arc::new(Mutex::new(0)));
        let gate = Arc::new(Mutex::new(()));
        let held = gate.lock().unwrap();
        let fast = Collect { rows: fast_rows.clone(), stall: None };
        let slow = Collect { rows: slow_rows.clone(), stall: Some(gate.clone()) };
        let one = output(0, 100).batch.get_array_memory_size();
        let mut f =
            FanOut::spawn(vec![("fast".into(), Box::new(fast)), ("slow".into(), Box::new(slow))], 2 * one).unwrap();
        // The slow sink's writer holds one batch at the gate, its queue two more: the rest is dropped.
        for i in 0..100 {
            f.write(&output(i * 100, 100)).unwrap();
            // The fast sink is let take each batch before the next (its queue never fills).
            while f.counts()[0].1.written < (i + 1) * 100 {
                std::thread::sleep(Duration::from_micros(100));
            }
        }
        drop(held);
        f.finish().unwrap();
        let c = f.counts();
        assert_eq!(c[1].1.written + c[1].1.dropped, 10_000, "{c:?}");
        assert!(c[1].1.dropped >= 10_000 - 300, "the stalled sink kept at most three batches: {c:?}");
        assert_eq!(*slow_rows.lock().unwrap(), c[1].1.written);
        assert_eq!((c[0].1.written, c[0].1.dropped), (10_000, 0), "{c:?}");
        assert_eq!(*fast_rows.lock().unwrap(), 10_000);
    }
}
