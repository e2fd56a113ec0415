/*
 * The floor of ebq's Kafka sink (issue 38): a plain librdkafka producer sending
 * N messages of S bytes to one topic, configured as the sink is (`ebq` mode:
 * idempotent, acks=all, linger.ms=50, a topic handle taken first) or as lean as
 * librdkafka goes (`lean`: acks=1, not idempotent, linger.ms=100, one batch
 * holds a message), and its own CPU time (user + system, every thread of the
 * process: librdkafka's too) from before the producer is made to after it is
 * destroyed, with the part from the first produce to the end of the flush.
 *
 * Usage: librdkafka_floor BROKER TOPIC N BYTES [ebq|lean]
 */
#include <librdkafka/rdkafka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

static double cpu_ms(void)
{
	struct rusage u;

	getrusage(RUSAGE_SELF, &u);
	return u.ru_utime.tv_sec * 1e3 + u.ru_utime.tv_usec / 1e3 + u.ru_stime.tv_sec * 1e3 + u.ru_stime.tv_usec / 1e3;
}

static int delivered, failed;

static void on_delivery(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque)
{
	if (m->err)
		failed++;
	else
		delivered++;
}

static void set(rd_kafka_conf_t *c, const char *k, const char *v)
{
	char err[512];

	if (rd_kafka_conf_set(c, k, v, err, sizeof(err)) != RD_KAFKA_CONF_OK) {
		fprintf(stderr, "%s=%s: %s\n", k, v, err);
		exit(2);
	}
}

int main(int argc, char **argv)
{
	if (argc < 5) {
		fprintf(stderr, "usage: %s BROKER TOPIC N BYTES [ebq|lean]\n", argv[0]);
		return 2;
	}
	int n = atoi(argv[3]);
	size_t size = strtoul(argv[4], 0, 10);
	int lean = argc > 5 && !strcmp(argv[5], "lean");
	char err[512];
	double c0 = cpu_ms();
	rd_kafka_conf_t *c = rd_kafka_conf_new();

	set(c, "bootstrap.servers", argv[1]);
	set(c, "enable.idempotence", lean ? "false" : "true");
	set(c, "acks", lean ? "1" : "all");
	set(c, "linger.ms", lean ? "100" : "50");
	if (lean)
		set(c, "batch.size", "1000000");
	rd_kafka_conf_set_dr_msg_cb(c, on_delivery);
	rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, c, err, sizeof(err));
	if (!rk) {
		fprintf(stderr, "%s\n", err);
		return 1;
	}
	rd_kafka_topic_t *t = rd_kafka_topic_new(rk, argv[2], NULL);
	char *buf = malloc(size);
	memset(buf, 7, size);
	double c1 = cpu_ms();
	for (int i = 0; i < n; i++) {
		while (rd_kafka_producev(rk, RD_KAFKA_V_RKT(t), RD_KAFKA_V_VALUE(buf, size), RD_KAFKA_V_KEY("host", 4),
					 RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END))
			rd_kafka_poll(rk, 10);
		rd_kafka_poll(rk, 0);
	}
	rd_kafka_flush(rk, 10000);
	double c2 = cpu_ms();
	rd_kafka_topic_destroy(t);
	rd_kafka_destroy(rk);
	printf("%s\t%d\t%d\t%.1f\t%.1f\n", lean ? "lean" : "ebq", delivered, failed, c2 - c1, cpu_ms() - c0);
	return delivered == n ? 0 : 1;
}
