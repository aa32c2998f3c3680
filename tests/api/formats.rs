//! Answers in analysts' formats: CSV, Parquet, Arrow IPC stream and NDJSON on the six list
//! operations (read back and compared with the JSON items), negotiation through `format` and
//! `Accept`, the pagination headers, per-format ETags, and the full export.

use std::io::Cursor;

use polars::prelude::*;
use serde_json::Value;

use crate::common::*;

const CSV: &str = "text/csv";
const PARQUET: &str = "application/vnd.apache.parquet";
const ARROW: &str = "application/vnd.apache.arrow.stream";
const NDJSON: &str = "application/x-ndjson";

/// A generated catalog (nulls, several brands and categories) served by the real binary.
fn app() -> TestApp {
    let dir = temp_dir("formats");
    let data = dir.join("catalog.parquet");
    let mut df = eco_insights::sample::generate_catalog(400, 11).unwrap();
    write_frame(&mut df, &data);
    TestApp::serve(&dir, &data, &[])
}

/// A CSV document (RFC 4180: quoted fields, doubled quotes, quoted line breaks) as records.
fn parse_csv(text: &str) -> Vec<Vec<String>> {
    let (mut records, mut record, mut field) = (Vec::new(), Vec::new(), String::new());
    let (mut quoted, mut chars) = (false, text.chars().peekable());
    while let Some(c) = chars.next() {
        match (quoted, c) {
            (true, '"') if chars.peek() == Some(&'"') => {
                field.push('"');
                chars.next();
            }
            (true, '"') => quoted = false,
            (true, c) => field.push(c),
            (false, '"') => quoted = true,
            (false, ',') => record.push(std::mem::take(&mut field)),
            (false, '\n') => {
                record.push(std::mem::take(&mut field));
                records.push(std::mem::take(&mut record));
            }
            (false, '\r') => {}
            (false, c) => field.push(c),
        }
    }
    if !field.is_empty() || !record.is_empty() {
        record.push(field);
        records.push(record);
    }
    records
}

/// Whether a CSV field holds the JSON value (null ↔ empty field; numbers compared as numbers).
fn csv_cell_is(field: &str, value: &Value) -> bool {
    match value {
        Value::Null => field.is_empty(),
        Value::String(s) => field == s,
        Value::Bool(b) => field == if *b { "true" } else { "false" },
        Value::Number(n) => field.parse::<f64>().ok() == n.as_f64(),
        _ => false,
    }
}

/// Whether a Polars cell holds the JSON value.
fn cell_is(cell: &AnyValue, value: &Value) -> bool {
    match (cell, value) {
        (AnyValue::Null, Value::Null) => true,
        (AnyValue::String(s), Value::String(v)) => s == v,
        (AnyValue::StringOwned(s), Value::String(v)) => s.as_str() == v,
        (AnyValue::Boolean(b), Value::Bool(v)) => b == v,
        (AnyValue::Int32(i), Value::Number(n)) => n.as_i64() == Some(*i as i64),
        (AnyValue::Int64(i), Value::Number(n)) => n.as_i64() == Some(*i),
        (AnyValue::UInt64(i), Value::Number(n)) => n.as_u64() == Some(*i),
        (AnyValue::Float64(f), Value::Number(n)) => n.as_f64() == Some(*f),
        _ => false,
    }
}

/// Asserts that a frame holds exactly the JSON items: same columns in order, same values.
fn assert_frame_is(label: &str, df: &DataFrame, items: &[Value]) {
    assert_eq!(df.height(), items.len(), "{label}: rows");
    let Some(first) = items.first() else { return };
    let keys: Vec<&str> = first.as_object().unwrap().keys().map(String::as_str).collect();
    let names: Vec<&str> = df.get_column_names().iter().map(|n| n.as_str()).collect();
    assert_eq!(names, keys, "{label}: columns");
    for (i, item) in items.iter().enumerate() {
        for c in df.columns() {
            let cell = c.get(i).unwrap();
            assert!(
                cell_is(&cell, &item[c.name().as_str()]),
                "{label}: row {i} {}: {cell:?} vs {}",
                c.name(),
                item[c.name().as_str()]
            );
        }
    }
}

/// Asserts a CSV document holds exactly the JSON items (header = field names).
fn assert_csv_is(label: &str, text: &str, items: &[Value]) {
    let records = parse_csv(text);
    assert_eq!(records.len(), items.len() + 1, "{label}: one header line plus one line per item");
    if let Some(first) = items.first() {
        let keys: Vec<&str> = first.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(records[0], keys, "{label}: header");
        for (item, record) in items.iter().zip(&records[1..]) {
            for (key, field) in keys.iter().zip(record) {
                assert!(csv_cell_is(field, &item[*key]), "{label}: {key}: {field:?} vs {}", item[*key]);
            }
        }
    }
}

/// The list operations over the fixture, with the total their JSON answer implies.
fn operations(app: &TestApp) -> Vec<String> {
    let first = app.data("/catalog/vehicles?page_size=1")["items"][0]["id"].as_str().unwrap().to_string();
    vec![
        "/catalog/vehicles?page=2&page_size=7".into(),
        "/rankings/custom?metric=co2&top=15".into(),
        "/insights/efficiency?page=2&page_size=10".into(),
        "/insights/eco-scores?page_size=12".into(),
        "/aggregations/by-brand".into(),
        format!("/vehicles/{first}/compare-similar?top=9"),
    ]
}

fn with(path: &str, param: &str) -> String {
    format!("{path}{}{param}", if path.contains('?') { '&' } else { '?' })
}

#[test]
fn every_list_operation_answers_every_format_with_the_json_rows() {
    let app = app();
    for path in operations(&app) {
        let (status, body) = app.get(&path);
        assert_eq!(status, 200, "{path}: {body}");
        let items = body["data"]["data"]["items"].as_array().unwrap().clone();
        assert!(!items.is_empty(), "{path}: the fixture should give items");
        let total = body["data"]["meta"]["pagination"]["total"].as_u64().unwrap_or(items.len() as u64).to_string();
        let json = app.get_req(&path).send();
        assert_eq!(json.header("x-total-count"), Some(total.as_str()), "{path}: JSON carries X-Total-Count too");

        let csv = app.get_req(&with(&path, "format=csv")).send();
        assert_eq!(csv.status, 200, "{path}: {}", csv.text());
        assert!(csv.header("content-type").unwrap().starts_with(CSV), "{path}");
        assert_eq!(csv.header("x-total-count"), Some(total.as_str()), "{path}");
        assert_eq!(csv.header("x-dataset-version"), json.header("x-dataset-version"));
        assert_csv_is(&path, &csv.text(), &items);

        let ndjson = app.get_req(&with(&path, "format=ndjson")).send();
        assert_eq!(ndjson.header("content-type"), Some(NDJSON), "{path}");
        let lines: Vec<Value> = ndjson.text().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        assert_eq!(lines, items, "{path}: one JSON item per line, the same items");

        let parquet = app.get_req(&with(&path, "format=parquet")).send();
        assert_eq!(parquet.header("content-type"), Some(PARQUET), "{path}");
        let df = ParquetReader::new(Cursor::new(parquet.body.clone())).finish().unwrap();
        assert_frame_is(&format!("{path} parquet"), &df, &items);

        let arrow = app.get_req(&with(&path, "format=arrow")).send();
        assert_eq!(arrow.header("content-type"), Some(ARROW), "{path}");
        let df = IpcStreamReader::new(Cursor::new(arrow.body.clone())).finish().unwrap();
        assert_frame_is(&format!("{path} arrow"), &df, &items);

        // Every representation has its own tag; the same one again answers the same tag.
        let tags: Vec<String> =
            [&json, &csv, &ndjson, &parquet, &arrow].iter().map(|r| r.header("etag").unwrap().to_string()).collect();
        let distinct: std::collections::HashSet<&String> = tags.iter().collect();
        assert_eq!(distinct.len(), 5, "{path}: {tags:?}");
        assert!(csv.header("vary").unwrap().contains("Accept"), "{path}");
    }
}

#[test]
fn accept_negotiates_and_the_parameter_wins() {
    let app = app();
    for path in operations(&app) {
        let res = app.get_req(&path).header("Accept", CSV).send();
        assert!(res.header("content-type").unwrap().starts_with(CSV), "{path}");
        let res = app.get_req(&path).header("Accept", "application/json;q=0.5, application/x-ndjson").send();
        assert_eq!(res.header("content-type"), Some(NDJSON), "{path}: the higher quality wins");
        let res = app.get_req(&path).header("Accept", "*/*").send();
        assert_eq!(res.header("content-type"), Some("application/json"), "{path}: JSON by default");
        let res = app.get_req(&with(&path, "format=parquet")).header("Accept", CSV).send();
        assert_eq!(res.header("content-type"), Some(PARQUET), "{path}: format beats Accept");
        let res = app.get_req(&with(&path, "format=json")).header("Accept", "image/png").send();
        assert_eq!(res.header("content-type"), Some("application/json"), "{path}: even an impossible Accept");

        let message = assert_error(into_json(app.get_req(&with(&path, "format=xml")).send()), 400, "VALIDATION_ERROR");
        assert!(message.contains("'format'") && message.contains("xml"), "{path}: {message}");
        let res = app.get_req(&path).header("Accept", "image/png").send();
        assert_eq!(res.header("content-type"), Some("application/json"), "{path}: errors are JSON");
        let message = assert_error(into_json(res), 406, "NOT_ACCEPTABLE");
        assert!(message.contains("text/csv"), "{path}: the message lists the formats: {message}");
    }
    // Operations without formats keep rejecting the parameter.
    let message = assert_error(app.get("/insights/summary?format=csv"), 400, "VALIDATION_ERROR");
    assert!(message.contains("'format'"), "{message}");
}

#[test]
fn pagination_moves_to_headers() {
    let app = app();
    let body = app.get("/catalog/vehicles?marca=a&page=2&page_size=5").1;
    let total = body["data"]["meta"]["pagination"]["total"].as_u64().unwrap();
    assert!(total > 15, "the fixture should give several pages: {total}");
    let res = app.get_req("/catalog/vehicles?marca=a&page=2&page_size=5&format=csv").send();
    assert_eq!(res.header("x-total-count"), Some(total.to_string().as_str()));
    let link = res.header("link").unwrap();
    assert!(link.contains("</catalog/vehicles?marca=a&page=3&page_size=5&format=csv>; rel=\"next\""), "{link}");
    assert!(link.contains("</catalog/vehicles?marca=a&page=1&page_size=5&format=csv>; rel=\"prev\""), "{link}");
    // Following `next` gives the next page.
    let next = link.split(", ").find(|l| l.ends_with("rel=\"next\"")).unwrap();
    let target = &next[1..next.find('>').unwrap()];
    let page3 = app.data("/catalog/vehicles?marca=a&page=3&page_size=5")["items"].as_array().unwrap().clone();
    assert_csv_is(target, &app.get_req(target).send().text(), &page3);

    let first = app.get_req("/insights/eco-scores?page_size=5&format=ndjson").send();
    let link = first.header("link").unwrap();
    assert!(link.contains("rel=\"next\"") && !link.contains("rel=\"prev\""), "{link}");
    let last_page = total.div_ceil(5);
    let last = app.get_req(&format!("/catalog/vehicles?marca=a&page={last_page}&page_size=5&format=csv")).send();
    assert!(!last.header("link").unwrap().contains("rel=\"next\""));
    // Non-paginated lists: the count, no links.
    let res = app.get_req("/rankings/custom?top=7&format=csv").send();
    assert_eq!(res.header("x-total-count"), Some("7"));
    assert!(res.header("link").is_none());
    // A page past the end: no rows, the header line only.
    let past = app.get_req("/catalog/vehicles?page=999&format=csv").send();
    assert_eq!(parse_csv(&past.text()).len(), 1, "{}", past.text());
}

#[test]
fn tags_differ_per_representation_and_revalidate() {
    let app = app();
    let path = "/insights/eco-scores?page_size=3";
    let json = app.get_req(path).send();
    let csv = app.get_req(path).header("Accept", CSV).send();
    let (json_tag, csv_tag) = (json.header("etag").unwrap(), csv.header("etag").unwrap());
    assert_ne!(json_tag, csv_tag);
    // The JSON tag never validates the CSV answer, and the other way round.
    let res = app.get_req(path).header("Accept", CSV).header("If-None-Match", json_tag).send();
    assert_eq!(res.status, 200);
    assert!(res.header("content-type").unwrap().starts_with(CSV));
    let res = app.get_req(path).header("If-None-Match", csv_tag).send();
    assert_eq!(res.status, 200);
    // Each validates itself.
    let res = app.get_req(path).header("Accept", CSV).header("If-None-Match", csv_tag).send();
    assert_eq!(res.status, 304);
    assert!(res.body.is_empty());
    assert_eq!(app.get_req(path).header("If-None-Match", json_tag).send().status, 304);
    // The same representation through the parameter has its own (query-specific) tag.
    let param = app.get_req(&with(path, "format=csv")).send();
    let tag = param.header("etag").unwrap();
    assert_eq!(app.get_req(&with(path, "format=csv")).header("If-None-Match", tag).send().status, 304);
}

#[test]
fn the_export_streams_every_matching_vehicle_with_every_column() {
    let app = app();
    let catalog = app.get("/catalog/vehicles?combustivel=flex&page_size=100").1;
    let total = catalog["data"]["meta"]["pagination"]["total"].as_u64().unwrap();
    assert!(total > 100, "more than one page of the listing: {total}");
    let version = app.get_req("/catalog/vehicles").send().header("x-dataset-version").unwrap().to_string();

    let csv = app.get_req("/catalog/export?combustivel=flex").send();
    assert_eq!(csv.status, 200, "{}", csv.text());
    assert!(csv.header("content-type").unwrap().starts_with(CSV), "CSV by default");
    assert_eq!(
        csv.header("content-disposition"),
        Some(format!("attachment; filename=\"eco-insights-{version}.csv\"").as_str())
    );
    assert_eq!(csv.header("x-total-count"), Some(total.to_string().as_str()));
    let records = parse_csv(&csv.text());
    assert_eq!(records.len() as u64, total + 1, "a header line and one line per vehicle");
    let header = &records[0];
    for column in [
        "id",
        "marca",
        "tanque_l",
        "classificacao_pbe_geral",
        "eficiencia_media_referencia",
        "consumo_referencia",
        "co2_referencia_g_km",
        "autonomia_km",
        "custo_anual_estimado",
        "eco_score",
        "eco_faixa",
    ] {
        assert!(header.iter().any(|h| h == column), "{column} missing from {header:?}");
    }
    // Rows in catalog order: the first page of the listing is the export's start.
    let listing = catalog["data"]["data"]["items"].as_array().unwrap();
    for (item, record) in listing.iter().zip(&records[1..]) {
        for (key, field) in header.iter().zip(record) {
            if let Some(value) = item.get(key) {
                assert!(csv_cell_is(field, value), "{key}: {field:?} vs {value}");
            }
        }
    }
    // Metrics equal the per-vehicle answers.
    let id_at = header.iter().position(|h| h == "id").unwrap();
    let score_at = header.iter().position(|h| h == "eco_score").unwrap();
    let cost_at = header.iter().position(|h| h == "custo_anual_estimado").unwrap();
    for record in records.iter().skip(1).take(10) {
        let summary = app.data(&format!("/vehicles/{}/summary", record[id_at]));
        assert!(csv_cell_is(&record[cost_at], &summary["summary"]["consumo"]["custo_anual_estimado"]));
        let score = app.data(&format!("/vehicles/{}/eco-score", record[id_at]));
        assert!(csv_cell_is(&record[score_at], &score["eco_score"]));
    }

    // The other formats hold the same rows.
    let parquet = app.get_req("/catalog/export?combustivel=flex&format=parquet").send();
    assert_eq!(parquet.header("content-type"), Some(PARQUET));
    assert!(parquet.header("content-disposition").unwrap().ends_with(&format!("eco-insights-{version}.parquet\"")));
    let from_parquet = ParquetReader::new(Cursor::new(parquet.body.clone())).finish().unwrap();
    assert_eq!(from_parquet.height() as u64, total);
    let names: Vec<&str> = from_parquet.get_column_names().iter().map(|n| n.as_str()).collect();
    assert_eq!(names, header.iter().map(String::as_str).collect::<Vec<_>>());
    let arrow = app.get_req("/catalog/export?combustivel=flex").header("Accept", ARROW).send();
    let from_arrow = IpcStreamReader::new(Cursor::new(arrow.body.clone())).finish().unwrap();
    assert!(from_arrow.equals_missing(&from_parquet), "Arrow and Parquet exports are equal");
    let ndjson = app.get_req("/catalog/export?combustivel=flex&format=ndjson").send();
    let lines: Vec<Value> = ndjson.text().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len() as u64, total);
    for (line, record) in lines.iter().zip(&records[1..]) {
        for (key, field) in header.iter().zip(record) {
            assert!(csv_cell_is(field, &line[key.as_str()]), "{key}: {field:?} vs {}", line[key.as_str()]);
        }
    }

    // Unfiltered: every vehicle.
    let all = app.get_req("/catalog/export?format=ndjson").send();
    assert_eq!(all.text().lines().count(), 400);
    assert_eq!(all.header("x-total-count"), Some("400"));
}

#[test]
fn the_export_negotiates_and_revalidates() {
    let app = app();
    let csv = app.get_req("/catalog/export?marca=fiat").send();
    let parquet = app.get_req("/catalog/export?marca=fiat").header("Accept", PARQUET).send();
    let (csv_tag, parquet_tag) = (csv.header("etag").unwrap(), parquet.header("etag").unwrap());
    assert_ne!(csv_tag, parquet_tag);
    assert_ne!(csv_tag, app.get_req("/catalog/export?marca=byd").send().header("etag").unwrap(), "filters in the tag");
    let res = app.get_req("/catalog/export?marca=fiat").header("If-None-Match", csv_tag).send();
    assert_eq!(res.status, 304);
    assert!(res.body.is_empty());
    let res =
        app.get_req("/catalog/export?marca=fiat").header("Accept", PARQUET).header("If-None-Match", csv_tag).send();
    assert_eq!(res.status, 200, "another format is another answer");
    assert_error(
        into_json(app.get_req("/catalog/export").header("Accept", "application/json").send()),
        406,
        "NOT_ACCEPTABLE",
    );
    let message = assert_error(app.get("/catalog/export?format=json"), 400, "VALIDATION_ERROR");
    assert!(message.contains("csv, parquet, arrow, ndjson"), "{message}");
    assert_error(app.get("/catalog/export?page=2"), 400, "VALIDATION_ERROR");
    assert_error(app.get("/catalog/export?ano=1800"), 400, "VALIDATION_ERROR");
    // A filter matching nothing: the header line only.
    let none = app.get_req("/catalog/export?marca=zzzz").send();
    assert_eq!(none.header("x-total-count"), Some("0"));
    assert_eq!(parse_csv(&none.text()).len(), 1);
    let unauthorised = app.raw("GET", "/catalog/export").send();
    assert_eq!(unauthorised.status, 401);
}

#[test]
fn csv_parser_handles_quotes() {
    assert_eq!(
        parse_csv("a,b\n\"x, y\",\"say \"\"hi\"\"\"\n,\n"),
        vec![vec!["a", "b"], vec!["x, y", "say \"hi\""], vec!["", ""]]
    );
}
