//! `ebq describe EVENT [ARG[.PATH]]`: an event's raw arguments, and the members of the
//! struct an argument path reaches, each with its C type and the SQL type it reads as
//! (or why it cannot be a column).

use super::btf_args::{column_type, raw_args};
use super::BoundEvent;
use crate::btf::{Btf, PathError, TypeId};
use crate::host::KernelInfo;

/// One line of a description: a name, its C type, and its SQL type or why it has none.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Described {
    /// The argument or member name.
    pub name: String,
    /// Its type as C declares it.
    pub c_type: String,
    /// `Ok(sql type)`, or `Err(what to do)`: a struct to walk into, a bitfield, …
    pub sql: Result<String, String>,
}

/// The raw arguments of `event`, or `None` when it has none the kernel describes
/// (not a tracepoint, or no BTF).
pub fn describe_args(kernel: &dyn KernelInfo, event: &BoundEvent) -> Option<Vec<Described>> {
    let (btf, args) = raw_args(kernel, event)?;
    Some(args.into_iter().map(|a| described(btf, a.name, a.ty, a.c_type, None)).collect())
}

/// The members of the struct that `path` (`rq`, `rq.q.disk`) reaches from a raw argument
/// of `event`, with the C type of the path's value; an error message when it reaches none.
pub fn describe_members(
    kernel: &dyn KernelInfo,
    event: &BoundEvent,
    path: &str,
) -> Result<(String, Vec<Described>), String> {
    let (btf, args) = raw_args(kernel, event)
        .ok_or_else(|| format!("{} has no raw arguments the kernel's BTF describes", event.name))?;
    let steps: Vec<&str> = path.split('.').collect();
    let names: Vec<&str> = args.iter().map(|a| a.name.as_str()).collect();
    let arg = args.iter().find(|a| a.name == steps[0]).ok_or_else(|| {
        format!("`{}` is not a raw argument of {}; its raw arguments: {}", steps[0], event.name, names.join(", "))
    })?;
    match btf.resolve_path(arg.ty, &steps[1..]) {
        // A struct by value cannot be a column, but it has members to list.
        Ok(_) | Err(PathError::Unreadable { .. }) => {}
        Err(PathError::UnknownMember { member, container, suggestions, .. }) if !suggestions.is_empty() => {
            return Err(format!("`{container}` has no member `{member}`; did you mean {}?", suggestions.join(", ")))
        }
        Err(e) => return Err(e.to_string()),
    }
    let ty = member_type(btf, arg.ty, &steps[1..]).unwrap_or(arg.ty);
    let fields =
        btf.struct_members(ty).ok_or_else(|| format!("`{path}` is `{}`, which has no members", btf.c_type_name(ty)))?;
    let members = fields.into_iter().map(|f| described(btf, f.name, f.ty, f.c_type, f.bitfield_bits)).collect();
    Ok((btf.c_type_name(ty), members))
}

/// The declared type at the end of `steps` from `root`, walking members by name.
fn member_type(btf: &Btf, root: TypeId, steps: &[&str]) -> Option<TypeId> {
    steps.iter().try_fold(root, |ty, step| btf.struct_members(ty)?.into_iter().find(|f| f.name == *step).map(|f| f.ty))
}

fn described(btf: &Btf, name: String, ty: TypeId, c_type: String, bitfield: Option<u32>) -> Described {
    let sql = match (bitfield, btf.classify(ty)) {
        (Some(bits), _) => Err(format!("{bits}-bit bitfield: not readable yet")),
        (None, Ok(leaf)) => Ok(column_type(leaf).to_string()),
        (None, Err(_)) if btf.struct_members(ty).is_some() => {
            Err("a struct: name one of its members (describe ARG.PATH lists them)".into())
        }
        (None, Err(why)) => Err(why.to_string()),
    };
    Described { name, c_type, sql }
}

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
