use super::*;
use crate::export::otlp::OtlpConfig;
use arrow_array::{ArrayRef, Float64Array, Int64Array, RecordBatch, StringArray, UInt64Array};
use arrow_schema::{DataType, Field, Schema};
use ebq_front::hist::Bucket;
use opentelemetry_proto::tonic::collector::logs::v1::ExportLogsPartialSuccess;
use opentelemetry_proto::tonic::collector::logs::v1::ExportLogsServiceResponse;
use prost::Message;
use std::sync::Arc;

fn output(window: WindowBounds) -> Output {
    let schema = Arc::new(Schema::new(vec![
        Field::new("time", DataType::UInt64, false),
        Field::new("fd", DataType::UInt64, false),
        Field::new("comm", DataType::Utf8, false),
        Field::new("delta", DataType::Int64, true),
        Field::new("ratio", DataType::Float64, false),
    ]));
    let cols: Vec<ArrayRef> = vec![
        Arc::new(UInt64Array::from(vec![1_000, 2_000])),
        Arc::new(UInt64Array::from(vec![3, u64::MAX])),
        Arc::new(StringArray::from(vec!["dd", "fio"])),
        Arc::new(Int64Array::from(vec![Some(-5), None])),
        Arc::new(Float64Array::from(vec![0.5, 2.25])),
    ];
    Output { window, batch: RecordBatch::try_new(schema, cols).unwrap(), partial: false, extras: vec![] }
}

fn value(kv: &KeyValue) -> Option<any_value::Value> {
    kv.value.as_ref().unwrap().value.clone()
}

#[test]
fn rows_become_records_with_typed_attributes_and_their_event_time() {
    use any_value::Value as A;
    let recs = log_records(&output(WindowBounds::Rows));
    assert_eq!(recs.len(), 2, "one record a row");
    let unix = |mono: u64| wall_clock().wall_ns(mono) as u64;
    assert_eq!((recs[0].time_unix_nano, recs[1].time_unix_nano), (unix(1_000), unix(2_000)));
    assert_eq!(recs[1].time_unix_nano - recs[0].time_unix_nano, 1_000, "one offset for the run");
    let keys: Vec<&str> = recs[0].attributes.iter().map(|a| a.key.as_str()).collect();
    assert_eq!(keys, ["fd", "comm", "delta", "ratio"], "SELECT order, `time` is the record's time");
    let a = &recs[0].attributes;
    assert_eq!(
        [value(&a[0]), value(&a[1]), value(&a[2]), value(&a[3])],
        [Some(A::IntValue(3)), Some(A::StringValue("dd".into())), Some(A::IntValue(-5)), Some(A::DoubleValue(0.5))]
    );
    let b = &recs[1].attributes;
    assert_eq!(value(&b[0]), Some(A::StringValue(u64::MAX.to_string())), "beyond i64: exact, as text");
    assert_eq!(value(&b[2]), None, "NULL: the key without a value");
    assert_eq!(recs[0].observed_time_unix_nano, 0, "set when sent");
}

#[test]
fn window_results_carry_their_bounds_and_end_time() {
    use any_value::Value as A;
    let unix = |mono: u64| wall_clock().wall_ns(mono);
    let mut o = output(WindowBounds::Time { start_ns: 10_000, end_ns: 20_000 });
    // An aggregate has no `time` column: the window's end is the records' time.
    o.batch = o.batch.project(&[1, 2]).unwrap();
    let recs = log_records(&o);
    assert_eq!(recs[0].time_unix_nano, unix(20_000) as u64);
    let keys: Vec<&str> = recs[0].attributes.iter().map(|a| a.key.as_str()).collect();
    assert_eq!(keys, ["window_start", "window_end", "fd", "comm"]);
    assert_eq!(value(&recs[0].attributes[0]), Some(A::IntValue(unix(10_000))));
    let counted = log_records(&Output { window: WindowBounds::Count { index: 7 }, ..o });
    assert_eq!((counted[0].time_unix_nano, value(&counted[0].attributes[0])), (0, Some(A::IntValue(7))));
}

#[test]
fn histograms_are_arrays_of_their_non_empty_buckets() {
    use any_value::Value as A;
    let buckets = vec![Bucket { lo: 0, hi: 1, count: 0 }, Bucket { lo: 64, hi: 128, count: 9 }];
    let Some(A::ArrayValue(arr)) = any_value(Value::Hist(buckets)).value else { panic!() };
    assert_eq!(arr.values.len(), 1);
    let Some(A::KvlistValue(kvs)) = &arr.values[0].value else { panic!() };
    let got: Vec<(&str, Option<A>)> = kvs.values.iter().map(|kv| (kv.key.as_str(), value(kv))).collect();
    assert_eq!(got, [("lo", Some(A::IntValue(64))), ("hi", Some(A::IntValue(128))), ("count", Some(A::IntValue(9)))]);
}

#[test]
fn the_request_carries_the_resource_scope_and_observed_time() {
    let mut config = OtlpConfig::new("http://127.0.0.1:1", "node7");
    config.resource = vec![("cluster".into(), "c1".into())];
    let id = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
    let path = format!("/system.slice/docker-{id}.scope");
    let attrs = resource_attributes(&config, Some(&path));
    let get = |k: &str| attrs.iter().find(|(key, _)| key == k).map(|(_, v)| v.as_str());
    assert_eq!((get("host.name"), get("service.name"), get("cluster")), (Some("node7"), Some("ebq"), Some("c1")));
    assert_eq!((get("ebq.cgroup.path"), get("container.id")), (Some(path.as_str()), Some(id)));
    assert_eq!(resource_attributes(&config, Some("/ebq-t")).iter().filter(|(k, _)| k == "container.id").count(), 0);
    let req = request(&attrs, log_records(&output(WindowBounds::Rows)), 42);
    let scope_logs = &req.resource_logs[0].scope_logs[0];
    assert_eq!(scope_logs.scope.as_ref().unwrap().name, "ebq");
    assert!(scope_logs.log_records.iter().all(|r| r.observed_time_unix_nano == 42));
    let decoded = ExportLogsServiceRequest::decode(req.encode_to_vec().as_slice()).unwrap();
    assert_eq!(decoded, req);
}

#[test]
fn partial_success_counts_rejected_records() {
    let reply = |n| {
        ExportLogsServiceResponse {
            partial_success: Some(ExportLogsPartialSuccess { rejected_log_records: n, error_message: "x".into() }),
        }
        .encode_to_vec()
    };
    assert_eq!((rejected(&reply(3), 10), rejected(&reply(30), 10), rejected(&reply(-1), 10)), (3, 10, 0));
    assert_eq!((rejected(&[], 10), rejected(b"not protobuf \xff", 10)), (0, 0));
}
