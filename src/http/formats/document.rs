//! The formats in the OpenAPI document: on each operation that offers them, the `format`
//! parameter, the extra media types of the 200 answer, `X-Total-Count` / `Link` (and
//! `Content-Disposition` on the export) and the 406 answer.

use serde_json::{json, Map, Value};

use super::{Format, EXPORT, LIST};

/// The list operations that answer in every list format, and whether they are paginated.
pub const LIST_OPERATIONS: &[(&str, bool)] = &[
    ("/catalog/vehicles", true),
    ("/rankings/custom", false),
    ("/insights/efficiency", true),
    ("/insights/eco-scores", true),
    ("/aggregations/by-brand", false),
    ("/vehicles/{vehicle_id}/compare-similar", false),
];

/// The export operation.
pub const EXPORT_PATH: &str = "/catalog/export";

/// Name of the shared 406 answer under `components.responses`.
const NOT_ACCEPTABLE: &str = "NotAcceptable";

/// How the rows of a non-JSON answer relate to the JSON items (the `format` parameter's text).
const ROWS_RULE: &str = "Rows are the JSON answer's items (`data.data.items`, this page only), \
    with the same field names as columns, in the same order, and the same values (numbers rounded \
    as in JSON; null stays null, an empty field in CSV). Items are flat; a nested object would \
    become columns named `parent.child`. Without the envelope, the pagination is in `X-Total-Count` \
    and `Link`. CSV is UTF-8 with a header line; Arrow is the IPC streaming format; NDJSON is one \
    JSON item per line.";

/// Adds the formats to the served document (JSON form, see `openapi::to_json`).
pub fn annotate(doc: &mut Value) {
    let Some(responses) = doc.pointer("/components/responses/BadRequest").cloned() else { return };
    if let Some(components) = doc.pointer_mut("/components/responses").and_then(Value::as_object_mut) {
        let mut not_acceptable = responses;
        not_acceptable["description"] = json!(
            "NOT_ACCEPTABLE: the `Accept` header lists no media type this operation can produce (and no \
             `format` parameter was given); the message lists the available ones. Errors are always JSON."
        );
        components.insert(NOT_ACCEPTABLE.into(), not_acceptable);
    }
    for (path, paginated) in LIST_OPERATIONS {
        if let Some(op) = operation(doc, path) {
            add_formats(op, LIST, *paginated, false);
        }
    }
    if let Some(op) = operation(doc, EXPORT_PATH) {
        add_formats(op, EXPORT, false, true);
    }
    for method in ["get", "post"] {
        if let Some(op) = doc.pointer_mut(&format!("/paths/~1sql/{method}")) {
            add_formats(op, LIST, false, false);
        }
    }
}

fn operation<'a>(doc: &'a mut Value, path: &str) -> Option<&'a mut Value> {
    doc.pointer_mut(&format!("/paths/{}/get", path.replace('~', "~0").replace('/', "~1")))
}

fn add_formats(op: &mut Value, offered: &[Format], paginated: bool, export: bool) {
    let names: Vec<&str> = offered.iter().map(|f| f.name()).collect();
    let default = offered[0];
    let accept: Vec<String> = offered.iter().map(|f| format!("`{}` ({})", f.media_type(), f.name())).collect();
    let parameter = json!({
        "name": "format",
        "in": "query",
        "required": false,
        "description": format!(
            "Representation of the answer; wins over the `Accept` header, which is used when this \
             parameter is absent ({}; q-values and wildcards honoured, default {}). {}",
            accept.join(", "),
            default.name(),
            if export { EXPORT_RULE } else { ROWS_RULE }
        ),
        "schema": {"type": "string", "enum": names, "default": default.name()},
    });
    if let Some(params) = op.as_object_mut().map(|o| o.entry("parameters").or_insert_with(|| json!([]))) {
        if let Some(list) = params.as_array_mut() {
            list.retain(|p| p["name"] != "format");
            list.push(parameter);
        }
    }
    let Some(ok) = op.pointer_mut("/responses/200").and_then(Value::as_object_mut) else { return };
    let content = ok.entry("content").or_insert_with(|| json!({}));
    if let Some(content) = content.as_object_mut() {
        for f in offered {
            if *f == Format::Json {
                continue;
            }
            content.insert(f.media_type().into(), media(*f));
        }
    }
    let headers = ok.entry("headers").or_insert_with(|| json!({}));
    if let Some(headers) = headers.as_object_mut() {
        add_headers(headers, paginated, export);
    }
    if let Some(responses) = op.get_mut("responses").and_then(Value::as_object_mut) {
        responses.insert("406".into(), json!({"$ref": format!("#/components/responses/{NOT_ACCEPTABLE}")}));
    }
}

/// What the export's rows are.
const EXPORT_RULE: &str = "Every matching vehicle (no pagination), one row each in catalog order, \
    with every input column (named as in the catalog file) plus the published metrics \
    eficiencia_media_referencia, consumo_referencia, co2_referencia_g_km, autonomia_km, \
    custo_anual_estimado, eco_score and eco_faixa; null stays null (an empty field in CSV). \
    Streamed in chunks of 50,000 rows: CSV has one header line; Parquet one row group per chunk; \
    Arrow (IPC streaming format) one record batch per chunk; NDJSON one JSON object per line.";

fn media(format: Format) -> Value {
    let text = matches!(format, Format::Csv | Format::Ndjson);
    let mut schema = Map::new();
    schema.insert("type".into(), json!("string"));
    if !text {
        schema.insert("contentMediaType".into(), json!(format.media_type()));
    }
    schema.insert(
        "description".into(),
        json!(match format {
            Format::Csv => "CSV (RFC 4180), UTF-8, one header line with the field names.",
            Format::Parquet => "Apache Parquet file.",
            Format::Arrow => "Apache Arrow IPC stream (one schema, then record batches).",
            Format::Ndjson => "One JSON object per line (the JSON items), each line ending in `\\n`.",
            Format::Json => "",
        }),
    );
    json!({ "schema": Value::Object(schema) })
}

fn add_headers(headers: &mut Map<String, Value>, paginated: bool, export: bool) {
    headers.insert(
        "X-Total-Count".into(),
        json!({
            "required": true,
            "description": if export {
                "Rows in this export (the vehicles matching the filters)."
            } else if paginated {
                "Items of the whole list, every page (`data.meta.pagination.total` in JSON)."
            } else {
                "Items of this list."
            },
            "schema": {"type": "integer", "minimum": 0},
        }),
    );
    if paginated {
        headers.insert(
            "Link".into(),
            json!({
                "required": false,
                "description": "RFC 8288 links to the `next` page (when a later page holds items) and the \
                    `prev` page (when this is not page 1), relative to the request, its other parameters kept: \
                    `</catalog/vehicles?page=3&page_size=20>; rel=\"next\", </catalog/vehicles?page=1&page_size=20>; rel=\"prev\"`.",
                "schema": {"type": "string"},
            }),
        );
    }
    if export {
        headers.insert(
            "Content-Disposition".into(),
            json!({
                "required": true,
                "description": "`attachment; filename=\"eco-insights-<dataset version>.<csv|parquet|arrows|ndjson>\"`.",
                "schema": {"type": "string"},
            }),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn list_operations_document_formats_headers_and_406() {
        let mut doc = json!({
            "components": {"responses": {"BadRequest": {"description": "x", "content": {"application/json": {}}}}},
            "paths": {
                "/catalog/vehicles": {"get": {"parameters": [{"name": "page"}], "responses": {"200": {"content": {"application/json": {}}, "headers": {}}}}},
                "/catalog/export": {"get": {"responses": {"200": {"content": {"text/csv": {}}}}}}
            }
        });
        annotate(&mut doc);
        let op = &doc["paths"]["/catalog/vehicles"]["get"];
        let content = op["responses"]["200"]["content"].as_object().unwrap();
        let types: Vec<&str> = content.keys().map(String::as_str).collect();
        assert_eq!(
            types,
            [
                "application/json",
                "text/csv",
                "application/vnd.apache.parquet",
                "application/vnd.apache.arrow.stream",
                "application/x-ndjson"
            ]
        );
        assert_eq!(op["parameters"][1]["schema"]["enum"], json!(["json", "csv", "parquet", "arrow", "ndjson"]));
        assert_eq!(op["responses"]["200"]["headers"]["X-Total-Count"]["required"], true);
        assert_eq!(op["responses"]["200"]["headers"]["Link"]["required"], false);
        assert_eq!(op["responses"]["406"]["$ref"], "#/components/responses/NotAcceptable");
        let export = &doc["paths"]["/catalog/export"]["get"];
        assert_eq!(export["parameters"][0]["schema"]["enum"], json!(["csv", "parquet", "arrow", "ndjson"]));
        assert_eq!(export["parameters"][0]["schema"]["default"], "csv");
        assert!(export["responses"]["200"]["headers"]["Content-Disposition"].is_object());
        let shared = &doc["components"]["responses"]["NotAcceptable"];
        assert!(shared["description"].as_str().unwrap().starts_with("NOT_ACCEPTABLE"));
        assert!(shared["content"]["application/json"].is_object(), "errors stay JSON");
    }
}
