//! Binding a USDT event: the binary, the probe's sites in its
//! `.note.stapsdt` notes, and their argument specs, each checked here so a
//! typo or an operand ebq cannot read is a positioned error, not a failed attach.

use super::{BoundEvent, EventSource, UsdtAttach};
use crate::catalog::usdt::UsdtSpecs;
use crate::catalog::{closest, Catalog};
use crate::error::{Error, QueryError, Result, Stage};
use crate::host::usdt::UsdtSite;
use crate::host::ElfError;
use crate::parse::{EventName, EventRef};

/// The sites of `usdt:PATH[:PROVIDER]:NAME` in the file `path` resolves to:
/// the canonical path and the matching sites, or a message and help.
pub fn find_sites(
    catalog: &Catalog,
    path: &str,
    provider: Option<&str>,
    name: &str,
) -> std::result::Result<(std::path::PathBuf, Vec<UsdtSite>), (String, Option<String>)> {
    let file = catalog.kernel().resolve_binary(path).map_err(|e| {
        let looked = match e {
            ElfError::NoFile { looked } if !path.contains('/') => looked.join(", "),
            _ => "the standard library directories".into(),
        };
        (format!("no file `{path}`"), Some(format!("give the binary's path, or the name of a library in {looked}")))
    })?;
    let sites = catalog.kernel().usdt_sites(&file).map_err(|e| match e {
        ElfError::NotElf(why) => (why, None),
        _ => (format!("cannot read the USDT notes of {}", file.display()), None),
    })?;
    if sites.is_empty() {
        return Err((
            format!("`{}` has no USDT probes (no .note.stapsdt section)", file.display()),
            Some("USDT probes come from <sys/sdt.h> (DTRACE_PROBE/STAP_PROBE); `readelf -n` lists them".into()),
        ));
    }
    let matching: Vec<UsdtSite> =
        sites.iter().filter(|s| s.name == name && provider.is_none_or(|p| p == s.provider)).cloned().collect();
    if matching.is_empty() {
        let mut names: Vec<String> = sites.iter().map(|s| s.name.clone()).collect();
        names.dedup();
        let suggestions = closest(name, names.iter().map(String::as_str));
        let help = if suggestions.is_empty() {
            format!("`ebq events 'usdt:{path}:*'` lists its probes")
        } else {
            format!("did you mean {}?", suggestions.iter().map(|x| format!("`{x}`")).collect::<Vec<_>>().join(", "))
        };
        let which = provider.map(|p| format!("{p}:{name}")).unwrap_or_else(|| name.to_string());
        return Err((format!("`{}` has no USDT probe `{which}`", file.display()), Some(help)));
    }
    let mut providers: Vec<&str> = matching.iter().map(|s| s.provider.as_str()).collect();
    providers.sort();
    providers.dedup();
    if providers.len() > 1 {
        return Err((
            format!("`{name}` is a probe of several providers in {}: {}", file.display(), providers.join(", ")),
            Some(format!("name one: usdt:{path}:{}:{name}", providers[0])),
        ));
    }
    Ok((file, matching))
}

/// Binds a USDT event.
pub(super) fn bind_usdt(from: &EventRef, catalog: &Catalog) -> Result<BoundEvent> {
    let EventName::Usdt { path, provider, name } = &from.name else { unreachable!("bind_usdt takes usdt events") };
    let fail = |message: String, help: Option<String>| {
        let mut e = QueryError::new(Stage::Bind, format!("{}: {message}", from.name), Some(from.span));
        if let Some(h) = help {
            e = e.with_help(h);
        }
        Error::Query(e)
    };
    let (file, sites) = find_sites(catalog, path, provider.as_deref(), name).map_err(|(m, h)| fail(m, h))?;
    let (specs, cookies) = UsdtSpecs::of(&sites).map_err(|m| fail(m, None))?;
    let provider = sites[0].provider.clone();
    Ok(BoundEvent {
        format: specs.format(&provider, name),
        source: EventSource::Usdt {
            path: file,
            provider,
            name: name.clone(),
            sites: sites
                .iter()
                .zip(cookies)
                .map(|(s, cookie)| UsdtAttach { offset: s.offset, semaphore: s.semaphore, cookie })
                .collect(),
            specs,
        },
        name: from.name.clone(),
    })
}

#[cfg(test)]
mod tests {
    //! Against the fixture's PostgreSQL notes (`tests/fixtures/uprobes`).
    use crate::catalog::Catalog;
    use crate::error::Error;

    fn bind_err(sql: &str) -> (String, Option<String>, (u32, u32)) {
        let q = crate::parse::parse_query(sql).unwrap();
        match crate::bind::bind(&q, &Catalog::fixture()) {
            Err(Error::Query(e)) => {
                let span = e.span.expect("positioned");
                (e.message.clone(), e.help.clone(), (span.start.column, span.end.column))
            }
            other => panic!("{sql}: {other:?}"),
        }
    }

    #[test]
    fn typos_and_missing_notes_are_positioned_errors() {
        let sql = "SELECT COUNT(*) FROM usdt:/usr/lib/postgresql/15/bin/postgres:smgr__md__read__strat";
        let (m, help, span) = bind_err(sql);
        assert!(m.contains("has no USDT probe `smgr__md__read__strat`"), "{m}");
        assert!(help.unwrap().starts_with("did you mean `smgr__md__read__start`"));
        assert_eq!(span, (22, sql.len() as u32 + 1));
        let (m, help, _) = bind_err("SELECT COUNT(*) FROM usdt:/usr/bin/bash:x");
        assert!(m.contains("has no USDT probes"), "{m}");
        assert!(help.unwrap().contains("readelf -n"));
        let (m, _, _) =
            bind_err("SELECT COUNT(*) FROM usdt:/usr/lib/postgresql/15/bin/postgres:other:checkpoint__start");
        assert!(m.contains("has no USDT probe `other:checkpoint__start`"), "{m}");
        let (m, _, _) = bind_err("SELECT arg1 FROM usdt:/usr/lib/postgresql/15/bin/postgres:checkpoint__start");
        assert!(m.contains("arg1"), "{m}");
    }
}
