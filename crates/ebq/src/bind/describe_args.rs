
#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::Catalog;

    fn event(sql_event: &str) -> BoundEvent {
        let sql = format!("SELECT COUNT(*) FROM {sql_event}");
        crate::bind::bind(&crate::parse::parse_query(&sql).unwrap(), &Catalog::fixture()).unwrap().event
    }

    fn line(name: &str, c_type: &str, sql: Result<&str, &str>) -> Described {
        Described { name: name.into(), c_type: c_type.into(), sql: sql.map(String::from).map_err(String::from) }
    }

    #[test]
    fn arguments_and_members_with_c_and_column_types() {
        let cat = Catalog::fixture();
        let ev = event("block.block_rq_complete");
        assert_eq!(
            describe_args(cat.kernel(), &ev).unwrap(),
            [
                line("rq", "struct request *", Ok("u64")),
                line("error", "blk_status_t", Ok("u8")),
                line("nr_bytes", "unsigned int", Ok("u32")),
            ]
        );
        let (c_type, members) = describe_members(cat.kernel(), &ev, "rq.q").unwrap();
        assert_eq!(c_type, "struct request_queue *");
        assert_eq!(
            members,
            [
                line("queuedata", "void *", Ok("u64")),
                line("disk", "struct gendisk *", Ok("u64")),
                line("queue_flags", "unsigned long", Ok("u64")),
            ]
        );
        // A struct by value lists its members; a bitfield says why it is not a column.
        assert_eq!(describe_members(cat.kernel(), &ev, "rq.lh").unwrap().0, "struct list_head");
        let (_, members) = describe_members(cat.kernel(), &ev, "rq").unwrap();
        assert!(members.contains(&line("ioprio", "unsigned int", Err("3-bit bitfield: not readable yet"))));
        assert_eq!(
            describe_members(cat.kernel(), &ev, "rq.q.dsk"),
            Err("`struct request_queue` has no member `dsk`; did you mean disk?".into())
        );
        assert!(describe_args(cat.kernel(), &event("syscalls.sys_enter_read")).is_none());
    }
}
