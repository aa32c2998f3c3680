//! The `diff` command: loads two exports through the service's own load path (the validator's
//! checks, the views) and reports what changed, by id, as text for people or as JSON.

use std::io::Write;
use std::process::ExitCode;

use serde_json::{json, Map, Value as Json};

use crate::config::{DiffArgs, DiffFormat};
use crate::engine::diff::{self, Changed, Value};
use crate::engine::load::{self, LoadError};
use crate::engine::snapshot::Snapshot;
use crate::engine::table::Vehicle;
use crate::engine::views::{CostConfig, Views};

/// Exit status of an invalid or unreadable export (1 stays for other failures).
pub const EXIT_INVALID: u8 = 2;

fn value(v: &Value) -> Json {
    match v {
        Value::Null => Json::Null,
        Value::Text(s) => Json::String(s.clone()),
        Value::Int(i) => json!(i),
        Value::Float(f) => json!(f),
        Value::Bool(b) => json!(b),
    }
}

fn label(v: &Vehicle) -> String {
    format!("{} {} {} {}", v.marca, v.modelo, v.versao, v.ano)
}

/// The JSON report: counts, the ids added and removed, and per changed vehicle its fields.
pub fn to_json(old: &Snapshot, new: &Snapshot, delta: &diff::Delta, changes: &[Changed]) -> Json {
    let c = delta.counts();
    let ids = |table: &Snapshot, rows: &[u32]| -> Vec<Json> {
        rows.iter().map(|r| Json::String(table.id_at(*r).to_string())).collect()
    };
    let changes: Vec<Json> = changes
        .iter()
        .map(|ch| {
            let fields: Vec<Json> = ch
                .fields
                .iter()
                .map(|f| {
                    let mut m = Map::new();
                    m.insert("field".into(), Json::String(f.field.into()));
                    m.insert("old".into(), value(&f.old));
                    m.insert("new".into(), value(&f.new));
                    Json::Object(m)
                })
                .collect();
            json!({ "id": ch.id.to_string(), "fields": fields })
        })
        .collect();
    json!({
        "old": { "file": old.info.source.display().to_string(), "version": old.info.version, "rows": old.info.rows },
        "new": { "file": new.info.source.display().to_string(), "version": new.info.version, "rows": new.info.rows },
        "added": c.added,
        "removed": c.removed,
        "changed": c.changed,
        "unchanged": c.unchanged,
        "added_ids": ids(new, &delta.added),
        "removed_ids": ids(old, &delta.removed),
        "changes": changes,
    })
}

/// The text report.
pub fn to_text(old: &Snapshot, new: &Snapshot, delta: &diff::Delta, changes: &[Changed]) -> String {
    let c = delta.counts();
    let mut out = format!(
        "{} ({} vehicles) -> {} ({} vehicles)\n{} added, {} removed, {} changed, {} unchanged\n",
        old.info.source.display(),
        old.info.rows,
        new.info.source.display(),
        new.info.rows,
        c.added,
        c.removed,
        c.changed,
        c.unchanged
    );
    for &r in &delta.added {
        out.push_str(&format!("added    {}  {}\n", new.id_at(r), label(&new.vehicle_at(r))));
    }
    for &r in &delta.removed {
        out.push_str(&format!("removed  {}  {}\n", old.id_at(r), label(&old.vehicle_at(r))));
    }
    for ch in changes {
        out.push_str(&format!("changed  {}  {}\n", ch.id, label(&ch.new)));
        for f in &ch.fields {
            out.push_str(&format!("    {}: {} -> {}\n", f.field, f.old, f.new));
        }
    }
    out
}

fn load(path: &std::path::Path, views: &Views, limits: load::InputLimits) -> Result<Snapshot, ExitCode> {
    load::load_file_limited(path, views, limits).map_err(|e| {
        eprintln!("{e}");
        match e {
            LoadError::Views { .. } => ExitCode::FAILURE,
            _ => ExitCode::from(EXIT_INVALID),
        }
    })
}

/// Runs `eco-insights diff`.
pub fn run(args: &DiffArgs) -> ExitCode {
    let views = match Views::read(&args.queries, &CostConfig::default()) {
        Ok(v) => v,
        Err(e) => {
            eprintln!("error: {e:#}");
            return ExitCode::FAILURE;
        }
    };
    let old = match load(&args.old, &views, args.input_limits()) {
        Ok(s) => s,
        Err(code) => return code,
    };
    let new = match load(&args.new, &views, args.input_limits()) {
        Ok(s) => s,
        Err(code) => return code,
    };
    let compared = crate::engine::contain::contained(|| {
        diff::compare(&old, &new).map(|delta| {
            let changes = diff::changes(&old, &new, &delta);
            (delta, changes)
        })
    });
    let (delta, changes) = match compared {
        Ok(Ok(d)) => d,
        Ok(Err(e)) => {
            eprintln!("error: cannot compare the exports: {e}");
            return ExitCode::FAILURE;
        }
        Err(panic) => {
            eprintln!("error: internal error while comparing the exports: {panic}");
            return ExitCode::FAILURE;
        }
    };
    let report = match args.format {
        DiffFormat::Json => match serde_json::to_string_pretty(&to_json(&old, &new, &delta, &changes)) {
            Ok(s) => s + "\n",
            Err(e) => {
                eprintln!("error: {e}");
                return ExitCode::FAILURE;
            }
        },
        DiffFormat::Text => to_text(&old, &new, &delta, &changes),
    };
    // A reader that stops early (`| head`) is not a failure.
    let mut out = std::io::stdout().lock();
    match out.write_all(report.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            eprintln!("error: cannot write the report: {e}");
            ExitCode::FAILURE
        }
        _ => ExitCode::SUCCESS,
    }
}
