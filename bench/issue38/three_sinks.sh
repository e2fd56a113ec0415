#!/usr/bin/env bash
# Issue 38's acceptance, "a row query with three sinks (terminal, Parquet, Kafka) costs within
# 10 % of the same query with one sink", measured with `ebq explain --analyze` (in-BPF ns per
# event, and the ebq process's CPU including the sinks' final flush), in interleaved rounds,
# against a real Apache Kafka broker (KRaft, one node on 127.0.0.1, the jars scripts/setup.sh
# fetched into target/kafka-jars). Each sink is also run alone, and the terminal with each other
# sink, so the three-sink cost can be set against its floor: the terminal plus what each added
# sink costs beside it. An Arrow IPC file alone (no encoding, a copy of the batches) stands for
# the query's own cost with the cheapest sink.
#
# Then the Kafka client's own floor on the same broker: librdkafka_floor.c, a plain C producer,
# sends the Arrow sink's batches' bytes (KAFKA_MESSAGES of KAFKA_BYTES, defaults 25 of 230,000:
# what 200,000 rows make) configured as the sink is (`ebq`: idempotent, acks=all) and as lean as
# librdkafka goes (`lean`: acks=1), its own CPU per run.
#
#   bash bench/issue38/three_sinks.sh [ROUNDS] [ROWS]      (defaults: 5 rounds, 200000 reads)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
rounds=${1:-5}
rows=${2:-200000}
ebq=$PWD/target/release/ebq
jars=$PWD/target/kafka-jars
[[ -x $ebq && -d $jars ]] || { echo "three_sinks: build ebq and run scripts/setup.sh first" >&2; exit 1; }
dir=$(mktemp -d /tmp/ebq-three-sinks.XXXXXX)
port=19092 controller=19093
java_() { java -Xmx512m -Dlog4j2.configurationFile="$dir/log4j2.properties" -cp "$jars/*" "$@"; }
cat >"$dir/server.properties" <<PROPS
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:$controller
listeners=PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$controller
advertised.listeners=PLAINTEXT://127.0.0.1:$port
controller.listener.names=CONTROLLER
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
inter.broker.listener.name=PLAINTEXT
log.dirs=$dir/logs
num.partitions=1
default.replication.factor=1
offsets.topic.replication.factor=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
PROPS
printf 'status = error\nappender.out.type = Console\nappender.out.name = out\nappender.out.layout.type = PatternLayout\nappender.out.layout.pattern = %%m%%n\nrootLogger.level = warn\nrootLogger.appenderRef.out.ref = out\n' >"$dir/log4j2.properties"
java_ kafka.tools.StorageTool format -t "$(java_ kafka.tools.StorageTool random-uuid | tail -1)" -c "$dir/server.properties" >/dev/null
# Not through java_: $! must be java's own pid, which the trap stops.
java -Xmx512m -Dlog4j2.configurationFile="$dir/log4j2.properties" -cp "$jars/*" kafka.Kafka "$dir/server.properties" \
    >"$dir/broker.log" 2>&1 &
broker=$!
trap 'kill $broker 2>/dev/null; wait $broker 2>/dev/null || true; rm -rf "$dir"' EXIT
for _ in $(seq 120); do (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null && break; sleep 1; done
for t in arrow json; do
    java_ org.apache.kafka.tools.TopicCommand --bootstrap-server 127.0.0.1:$port --create --topic "sinks-$t" \
        --partitions 1 --replication-factor 1 >/dev/null
done
kafka=kafka://127.0.0.1:$port
declare -A specs=(
    [terminal]="--sink -"
    [arrow]="--sink $dir/rows.arrow"
    [terminal-parquet]="--sink - --sink $dir/rows.parquet"
    [terminal-kafka-arrow]="--sink - --sink $kafka/sinks-arrow --kafka-format arrow"
    [parquet]="--sink $dir/rows.parquet"
    [kafka-arrow]="--sink $kafka/sinks-arrow --kafka-format arrow"
    [kafka-json]="--sink $kafka/sinks-json --kafka-format json"
    [three-arrow]="--sink - --sink $dir/rows.parquet --sink $kafka/sinks-arrow --kafka-format arrow"
    [three-json]="--sink - --sink $dir/rows.parquet --sink $kafka/sinks-json --kafka-format json"
)
order=(terminal arrow parquet kafka-arrow kafka-json terminal-parquet terminal-kafka-arrow three-arrow three-json)
echo "# $(date -u +%FT%TZ) $(git rev-parse --short HEAD) load $(cut -d' ' -f1-3 /proc/loadavg); $rows reads of dd bs=1, $rounds rounds"
printf '%s\t%s\t%s\t%s\t%s\n' round sinks ebq_cpu_ms bpf_ns_per_run rows_delivered
for r in $(seq "$rounds"); do
    # Rotate the order each round, so no configuration always runs first after the broker's idle.
    for i in "${!order[@]}"; do
        name=${order[$(((i + r) % ${#order[@]}))]}
        rm -f "$dir/rows.parquet" "$dir/rows.arrow"
        # shellcheck disable=SC2086
        out=$("$ebq" explain --analyze ${specs[$name]} \
            -c "dd if=/dev/zero of=/dev/null bs=1 count=$rows status=none" \
            "SELECT time, tid, count FROM syscalls.sys_enter_read" 2>"$dir/stderr" | grep -E "query program|\[user\] ebq process")
        cpu=$(sed -n 's/.*ebq process *\([0-9.]*\) ms CPU.*/\1/p' <<<"$out")
        ns=$(sed -n 's/.*, \([0-9.]*\) ns\/run.*/\1/p' <<<"$out" | head -1)
        delivered=$(sed -n 's/.*, \([0-9]*\) rows delivered.*/\1/p' <<<"$out")
        printf '%s\t%s\t%s\t%s\t%s\n' "$r" "$name" "$cpu" "$ns" "$delivered"
        grep -iE "dropped [1-9]|failed [1-9]|error" "$dir/stderr" >&2 || true
    done
done

# The Kafka client's floor (librdkafka_floor.c), on a topic of its own.
java_ org.apache.kafka.tools.TopicCommand --bootstrap-server 127.0.0.1:$port --create --topic floor \
    --partitions 1 --replication-factor 1 >/dev/null
cc -O2 -o "$dir/librdkafka_floor" bench/issue38/librdkafka_floor.c -lrdkafka
"$dir/librdkafka_floor" 127.0.0.1:$port floor "${KAFKA_MESSAGES:-25}" "${KAFKA_BYTES:-230000}" ebq >/dev/null # warm-up
printf '%s\t%s\t%s\t%s\t%s\t%s\n' round producer delivered failed produce_flush_cpu_ms process_cpu_ms
for r in $(seq "$rounds"); do
    for mode in ebq lean; do
        printf '%s\t' "$r"
        "$dir/librdkafka_floor" 127.0.0.1:$port floor "${KAFKA_MESSAGES:-25}" "${KAFKA_BYTES:-230000}" $mode
    done
done
