//! The functions catalog queries call (`format_type`, `pg_table_is_visible`, `pg_get_userbyid`,
//! `has_*_privilege`, `obj_description`…), as DataFusion scalar functions.

use super::*;

type Body = Arc<dyn Fn(&[ScalarValue]) -> ScalarValue + Send + Sync>;

/// A catalog function: a name, its arities, its result type and a body over one row's values.
pub(super) struct CatalogFunction {
    name: &'static str,
    signature: Signature,
    returns: DataType,
    body: Body,
}

impl std::fmt::Debug for CatalogFunction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name)
    }
}

impl PartialEq for CatalogFunction {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name
    }
}
impl Eq for CatalogFunction {}
impl std::hash::Hash for CatalogFunction {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.name.hash(state);
    }
}

impl ScalarUDFImpl for CatalogFunction {
    fn name(&self) -> &str {
        self.name
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> DfResult<DataType> {
        Ok(self.returns.clone())
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> DfResult<ColumnarValue> {
        let rows = args.number_rows;
        let all_scalar = args.args.iter().all(|a| matches!(a, ColumnarValue::Scalar(_)));
        let columns: Vec<ArrayRef> =
            args.args.iter().map(|a| a.to_array(rows.max(1))).collect::<DfResult<Vec<ArrayRef>>>()?;
        let mut out = Vec::with_capacity(rows);
        for i in 0..if all_scalar { 1 } else { rows } {
            let values =
                columns.iter().map(|c| ScalarValue::try_from_array(c, i)).collect::<DfResult<Vec<ScalarValue>>>()?;
            out.push((self.body)(&values).cast_to(&self.returns)?);
        }
        if all_scalar {
            return Ok(ColumnarValue::Scalar(out.pop().unwrap_or(ScalarValue::try_from(&self.returns)?)));
        }
        if out.is_empty() {
            return Ok(ColumnarValue::Array(datafusion::arrow::array::new_empty_array(&self.returns)));
        }
        Ok(ColumnarValue::Array(ScalarValue::iter_to_array(out)?))
    }
}

/// `json_build_object(key, value, …)` as PostgreSQL writes it (`{"a" : 1, "b" : "x"}`); a null
/// key is an error in PostgreSQL, NULL here.
fn json_object_text(args: &[ScalarValue]) -> Option<String> {
    let mut members = Vec::with_capacity(args.len() / 2);
    for pair in args.chunks(2) {
        let [key, value] = pair else { break };
        if key.is_null() {
            return None;
        }
        let key = serde_json::Value::String(text_of(key).unwrap_or_default());
        members.push(format!("{key} : {}", json_value(value)));
    }
    Some(format!("{{{}}}", members.join(", ")))
}

/// A value as PostgreSQL's `to_json` writes it: numbers and booleans as themselves, null as
/// null, anything else as its text.
fn json_value(v: &ScalarValue) -> serde_json::Value {
    use serde_json::Value as J;
    match v {
        _ if v.is_null() => J::Null,
        ScalarValue::Boolean(Some(b)) => J::Bool(*b),
        ScalarValue::Float32(Some(x)) => serde_json::Number::from_f64(f64::from(*x)).map_or(J::Null, J::Number),
        ScalarValue::Float64(Some(x)) => serde_json::Number::from_f64(*x).map_or(J::Null, J::Number),
        v if v.data_type().is_integer() => int_of(v).map_or(J::Null, |n| J::Number(n.into())),
        v => text_of(v).map_or(J::Null, J::String),
    }
}

fn int_of(v: &ScalarValue) -> Option<i64> {
    match v.cast_to(&DataType::Int64).ok()? {
        ScalarValue::Int64(n) => n,
        _ => None,
    }
}

fn text_of(v: &ScalarValue) -> Option<String> {
    match v.cast_to(&DataType::Utf8).ok()? {
        ScalarValue::Utf8(s) => s,
        _ => None,
    }
}

fn text(s: Option<String>) -> ScalarValue {
    ScalarValue::Utf8(s)
}

/// PostgreSQL's rule for quoting an identifier (`quote_ident`).
pub(super) fn quote_ident(name: &str) -> String {
    let plain = name.chars().next().is_some_and(|c| c.is_ascii_lowercase() || c == '_')
        && name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    if plain {
        name.to_string()
    } else {
        format!("\"{}\"", name.replace('"', "\"\""))
    }
}

pub(super) fn functions(
    relations: &Arc<BTreeMap<i64, (i64, String)>>,
    definitions: &Arc<BTreeMap<i64, String>>,
) -> Vec<CatalogFunction> {
    let arities = |counts: &[usize]| {
        Signature::one_of(counts.iter().map(|&n| TypeSignature::Any(n)).collect(), Volatility::Stable)
    };
    let f = |name: &'static str, counts: &[usize], returns: DataType, body: Body| CatalogFunction {
        name,
        signature: if counts == [0] { Signature::exact(vec![], Volatility::Stable) } else { arities(counts) },
        returns,
        body,
    };
    let null_text: Body = Arc::new(|_| ScalarValue::Utf8(None));
    // A privilege is held when it only reads: SELECT, USAGE, CONNECT, EXECUTE, MEMBER.
    let privilege: Body = Arc::new(|args| {
        let wanted = args.last().and_then(text_of).unwrap_or_default().to_uppercase();
        let read = ["SELECT", "USAGE", "CONNECT", "EXECUTE", "MEMBER", "REFERENCES"];
        ScalarValue::Boolean(Some(wanted.split(',').all(|p| read.iter().any(|r| p.trim().starts_with(r)))))
    });
    // A view's defining query, by oid or by name (`pg_get_viewdef('vw_metrics')`); NULL for a
    // table or an unknown relation, as in PostgreSQL.
    let viewdef = {
        let (relations, definitions) = (Arc::clone(relations), Arc::clone(definitions));
        move |args: &[ScalarValue]| -> ScalarValue {
            let oid = match args.first() {
                Some(v) if int_of(v).is_some() => int_of(v),
                Some(v) => text_of(v).and_then(|name| {
                    let name = name.trim().trim_matches('"').to_lowercase();
                    relations
                        .iter()
                        .find(|(_, (_, q))| *q == name || q.strip_prefix("public.") == Some(&name))
                        .map(|(oid, _)| *oid)
                }),
                None => None,
            };
            ScalarValue::Utf8(oid.and_then(|o| definitions.get(&o).cloned()))
        }
    };
    // `json_build_object(key, value, …)`: SQLAlchemy's column reflection asks it for identity
    // options. The object as JSON text, its values typed as PostgreSQL's to_json types them.
    let json_object: Body = Arc::new(|args| ScalarValue::Utf8(json_object_text(args)));
    let visible = {
        let relations = Arc::clone(relations);
        move |args: &[ScalarValue]| -> ScalarValue {
            let Some(oid) = args.first().and_then(int_of) else { return ScalarValue::Boolean(None) };
            let namespace = relations.get(&oid).map(|(n, _)| *n);
            ScalarValue::Boolean(Some(namespace.is_none_or(|n| n == PUBLIC || n == PG_CATALOG)))
        }
    };
    let regclass = {
        let relations = Arc::clone(relations);
        move |args: &[ScalarValue]| -> ScalarValue {
            let Some(name) = args.first().and_then(text_of) else { return ScalarValue::Int64(None) };
            if let Ok(oid) = name.trim().parse::<i64>() {
                return ScalarValue::Int64(Some(oid));
            }
            let name = name.trim().trim_matches('"').to_lowercase();
            let found = relations.iter().find(|(_, (_, q))| {
                *q == name || q.strip_prefix("public.") == Some(&name) || q.strip_prefix("pg_catalog.") == Some(&name)
            });
            ScalarValue::Int64(found.map(|(oid, _)| *oid))
        }
    };
    let relation_name = {
        let relations = Arc::clone(relations);
        move |args: &[ScalarValue]| -> ScalarValue {
            let oid = args.first().and_then(int_of);
            text(oid.map(|oid| match relations.get(&oid) {
                Some((n, q)) if *n == PUBLIC || *n == PG_CATALOG => {
                    quote_ident(q.split_once('.').map_or(q.as_str(), |(_, name)| name))
                }
                Some((_, q)) => q.clone(),
                None => oid.to_string(),
            }))
        }
    };
    let list_text = DataType::List(Arc::new(Field::new("item", DataType::Utf8, true)));
    vec![
        f(
            "pg_get_userbyid",
            &[1],
            DataType::Utf8,
            Arc::new(|a| {
                text(a.first().and_then(int_of).map(|o| {
                    if o == OWNER_OID {
                        OWNER.into()
                    } else {
                        format!("unknown (OID={o})")
                    }
                }))
            }),
        ),
        f("format_type", &[2], DataType::Utf8, Arc::new(|a| text(a.first().and_then(int_of).and_then(format_type)))),
        f("pg_table_is_visible", &[1], DataType::Boolean, Arc::new(visible)),
        f(
            "pg_type_is_visible",
            &[1],
            DataType::Boolean,
            Arc::new(|a| ScalarValue::Boolean(a.first().and_then(int_of).map(|_| true))),
        ),
        f(
            "pg_function_is_visible",
            &[1],
            DataType::Boolean,
            Arc::new(|a| ScalarValue::Boolean(a.first().and_then(int_of).map(|_| true))),
        ),
        f("has_table_privilege", &[2, 3], DataType::Boolean, Arc::clone(&privilege)),
        f("has_schema_privilege", &[2, 3], DataType::Boolean, Arc::clone(&privilege)),
        f("has_database_privilege", &[2, 3], DataType::Boolean, Arc::clone(&privilege)),
        f("has_column_privilege", &[3, 4], DataType::Boolean, Arc::clone(&privilege)),
        f("has_any_column_privilege", &[2, 3], DataType::Boolean, Arc::clone(&privilege)),
        f("has_function_privilege", &[2, 3], DataType::Boolean, Arc::clone(&privilege)),
        f("pg_has_role", &[2, 3], DataType::Boolean, Arc::clone(&privilege)),
        f("obj_description", &[1, 2], DataType::Utf8, Arc::clone(&null_text)),
        f("col_description", &[2], DataType::Utf8, Arc::clone(&null_text)),
        f("shobj_description", &[2], DataType::Utf8, Arc::clone(&null_text)),
        f("pg_get_expr", &[2, 3], DataType::Utf8, Arc::clone(&null_text)),
        f("pg_get_indexdef", &[1, 3], DataType::Utf8, Arc::clone(&null_text)),
        f("pg_get_constraintdef", &[1, 2], DataType::Utf8, Arc::clone(&null_text)),
        f("pg_get_viewdef", &[1, 2], DataType::Utf8, Arc::new(viewdef)),
        f("json_build_object", &[0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20], DataType::Utf8, json_object),
        f("pg_get_triggerdef", &[1, 2], DataType::Utf8, Arc::clone(&null_text)),
        f("pg_get_ruledef", &[1, 2], DataType::Utf8, Arc::clone(&null_text)),
        f("pg_get_partkeydef", &[1], DataType::Utf8, Arc::clone(&null_text)),
        f("pg_get_function_arguments", &[1], DataType::Utf8, Arc::clone(&null_text)),
        f("pg_get_function_identity_arguments", &[1], DataType::Utf8, Arc::clone(&null_text)),
        f("pg_get_function_result", &[1], DataType::Utf8, Arc::clone(&null_text)),
        f("pg_get_serial_sequence", &[2], DataType::Utf8, Arc::clone(&null_text)),
        f("pg_get_statisticsobjdef_columns", &[1], DataType::Utf8, Arc::clone(&null_text)),
        f("pg_tablespace_location", &[1], DataType::Utf8, Arc::new(|_| text(Some(String::new())))),
        f(
            "pg_encoding_to_char",
            &[1],
            DataType::Utf8,
            Arc::new(|a| {
                text(a.first().and_then(int_of).map(|e| if e == 6 { "UTF8".into() } else { "SQL_ASCII".into() }))
            }),
        ),
        f("pg_is_in_recovery", &[0], DataType::Boolean, Arc::new(|_| ScalarValue::Boolean(Some(false)))),
        f("pg_backend_pid", &[0], DataType::Int32, Arc::new(|_| ScalarValue::Int32(Some(std::process::id() as i32)))),
        f("pg_my_temp_schema", &[0], DataType::Int64, Arc::new(|_| ScalarValue::Int64(Some(0)))),
        f("pg_is_other_temp_schema", &[1], DataType::Boolean, Arc::new(|_| ScalarValue::Boolean(Some(false)))),
        f("pg_relation_size", &[1, 2], DataType::Int64, Arc::new(|_| ScalarValue::Int64(Some(0)))),
        f("pg_total_relation_size", &[1], DataType::Int64, Arc::new(|_| ScalarValue::Int64(Some(0)))),
        f("pg_table_size", &[1], DataType::Int64, Arc::new(|_| ScalarValue::Int64(Some(0)))),
        f("pg_indexes_size", &[1], DataType::Int64, Arc::new(|_| ScalarValue::Int64(Some(0)))),
        f(
            "quote_ident",
            &[1],
            DataType::Utf8,
            Arc::new(|a| text(a.first().and_then(text_of).map(|s| quote_ident(&s)))),
        ),
        f(
            "current_setting",
            &[1, 2],
            DataType::Utf8,
            Arc::new(|a| {
                let name = a.first().and_then(text_of).unwrap_or_default();
                text(SETTINGS.iter().find(|(n, _)| n.eq_ignore_ascii_case(&name)).map(|(_, v)| v.to_string()))
            }),
        ),
        f(
            "current_schemas",
            &[1],
            list_text,
            Arc::new(|a| {
                let implicit = matches!(a.first(), Some(ScalarValue::Boolean(Some(true))));
                let names: Vec<ScalarValue> = if implicit { vec!["pg_catalog", "public"] } else { vec!["public"] }
                    .into_iter()
                    .map(|s| ScalarValue::Utf8(Some(s.into())))
                    .collect();
                ScalarValue::List(ScalarValue::new_list_nullable(&names, &DataType::Utf8))
            }),
        ),
        f("to_regclass", &[1], DataType::Int64, Arc::new(regclass)),
        f(
            "to_regtype",
            &[1],
            DataType::Int64,
            Arc::new(|a| {
                let name = a.first().and_then(text_of).unwrap_or_default().trim().to_lowercase();
                let name = name.strip_prefix("pg_catalog.").unwrap_or(&name).to_string();
                ScalarValue::Int64(
                    SYSTEM
                        .types
                        .iter()
                        .find(|t| t.name == name || format_type(t.oid).as_deref() == Some(&name))
                        .map(|t| t.oid),
                )
            }),
        ),
        f("pg_relation_is_publishable", &[1], DataType::Boolean, Arc::new(|_| ScalarValue::Boolean(Some(false)))),
        f("eco_relation_name", &[1], DataType::Utf8, Arc::new(relation_name)),
        f("eco_type_name", &[1], DataType::Utf8, Arc::new(|a| text(a.first().and_then(int_of).and_then(format_type)))),
    ]
}

/// The catalog's functions an analyst's query may call (the sandbox's allow-list adds them).
pub const FUNCTIONS: &[&str] = &[
    "json_build_object",
    "pg_get_userbyid",
    "format_type",
    "pg_table_is_visible",
    "pg_type_is_visible",
    "pg_function_is_visible",
    "has_table_privilege",
    "has_schema_privilege",
    "has_database_privilege",
    "has_column_privilege",
    "has_any_column_privilege",
    "has_function_privilege",
    "pg_has_role",
    "obj_description",
    "col_description",
    "shobj_description",
    "pg_get_expr",
    "pg_get_indexdef",
    "pg_get_constraintdef",
    "pg_get_viewdef",
    "pg_get_triggerdef",
    "pg_get_ruledef",
    "pg_get_partkeydef",
    "pg_get_function_arguments",
    "pg_get_function_identity_arguments",
    "pg_get_function_result",
    "pg_get_serial_sequence",
    "pg_get_statisticsobjdef_columns",
    "pg_tablespace_location",
    "pg_encoding_to_char",
    "pg_is_in_recovery",
    "pg_backend_pid",
    "pg_my_temp_schema",
    "pg_is_other_temp_schema",
    "pg_relation_size",
    "pg_total_relation_size",
    "pg_table_size",
    "pg_indexes_size",
    "quote_ident",
    "current_setting",
    "current_schemas",
    "to_regclass",
    "to_regtype",
    "pg_relation_is_publishable",
    "current_user",
    "session_user",
    "user",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_build_object_is_written_as_postgresql_writes_it() {
        let args = [
            ScalarValue::from("a"),
            ScalarValue::Int64(Some(1)),
            ScalarValue::from("b"),
            ScalarValue::from("x \"y\""),
            ScalarValue::from("c"),
            ScalarValue::Utf8(None),
            ScalarValue::from("d"),
            ScalarValue::Boolean(Some(true)),
            ScalarValue::from("e"),
            ScalarValue::Float64(Some(2.5)),
        ];
        assert_eq!(
            json_object_text(&args).as_deref(),
            Some(r#"{"a" : 1, "b" : "x \"y\"", "c" : null, "d" : true, "e" : 2.5}"#)
        );
        assert_eq!(json_object_text(&[]).as_deref(), Some("{}"));
        assert_eq!(json_object_text(&[ScalarValue::Utf8(None), ScalarValue::Int64(Some(1))]), None);
    }
}
