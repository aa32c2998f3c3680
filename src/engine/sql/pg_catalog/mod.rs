//! PostgreSQL's system catalog, as the clients that browse a database read it (API-CONTRACT §7):
//! `pg_catalog` and `information_schema` list `catalog` and each view in schema `public`, with
//! their columns and the PostgreSQL types the doors answer them with, so psql's `\d` family,
//! SQLAlchemy's inspector, pgjdbc's `DatabaseMetaData` and BI tools' table browsers work.
//!
//! The relations and their columns are PostgreSQL 15's own (`pg_catalog.tsv`, exported from a
//! PostgreSQL server: every relation a client may name, its oid, kind and columns, and the rows
//! of `pg_type` for the built-in types). Most are empty, as they are in a database without
//! indexes, constraints, triggers, comments or functions of its own; the others hold the
//! database `eco`, its schemas, owner, tables, columns and types. They are small in-memory
//! tables of the same DataFusion session as the data, so clients' joins between them run as
//! any query does.
//!
//! The functions those queries call (`format_type`, `pg_table_is_visible`, `pg_get_userbyid`,
//! `has_*_privilege`, `obj_description`…) are registered here too, and [`rewrite`] turns the
//! syntax only catalog queries use into what DataFusion runs: `OPERATOR(pg_catalog.~)`,
//! `COLLATE pg_catalog.default`, casts to `regclass`, `regtype`, `oid`, `name` and `"char"`,
//! `current_user`, and scalar subqueries over relations that have no rows (NULL, as in
//! PostgreSQL: DataFusion cannot plan some of those correlated subqueries).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::ops::ControlFlow;
use std::sync::{Arc, LazyLock};

use datafusion::arrow::array::{ArrayRef, RecordBatch};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef, TimeUnit};
use datafusion::catalog::{MemTable, MemorySchemaProvider};
use datafusion::common::{Result as DfResult, ScalarValue};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, TypeSignature, Volatility,
};
use datafusion::prelude::SessionContext;
use sqlparser::ast::{
    BinaryOperator, CastKind, DataType as SqlType, Expr, Function, FunctionArg, FunctionArgExpr, FunctionArgumentList,
    FunctionArguments, GroupByExpr, Ident, JoinOperator, ObjectName, ObjectNamePart, Query, Select, SelectItem,
    SetExpr, Statement, TableFactor, TableWithJoins, Value, Visit, VisitMut, Visitor, VisitorMut,
};

/// The oids of the schemas (PostgreSQL's own for `pg_catalog` and `public`).
pub const PG_CATALOG: i64 = 11;
pub const PUBLIC: i64 = 2200;
pub const INFORMATION_SCHEMA: i64 = 13207;
/// The owner of every object (PostgreSQL's bootstrap superuser's oid), named [`OWNER`].
const OWNER_OID: i64 = 10;
pub const OWNER: &str = "eco";
/// The database's oid, and the first oid of the service's own tables.
const DATABASE_OID: i64 = 16383;
const FIRST_TABLE_OID: i64 = 16384;

/// PostgreSQL's relations and types (see the module's documentation).
const EXPORT: &str = include_str!("pg_catalog.tsv");

/// A relation of the system catalog: its schema, name, oid, kind (`r` table, `v` view) and
/// columns (name, PostgreSQL type as `format_type` writes it).
struct SystemRelation {
    schema: &'static str,
    name: &'static str,
    oid: i64,
    kind: &'static str,
    columns: Vec<(&'static str, &'static str)>,
}

/// A built-in type (a row of `pg_type`).
struct BuiltinType {
    oid: i64,
    name: &'static str,
    len: i64,
    by_val: bool,
    kind: &'static str,
    category: &'static str,
    preferred: bool,
    delimiter: &'static str,
    element: i64,
    array: i64,
    procs: [&'static str; 4],
    align: &'static str,
    storage: &'static str,
    collation: i64,
}

struct Export {
    relations: Vec<SystemRelation>,
    types: Vec<BuiltinType>,
}

static SYSTEM: LazyLock<Export> = LazyLock::new(|| {
    let mut relations = Vec::new();
    let mut types = Vec::new();
    for line in EXPORT.lines() {
        let f: Vec<&'static str> = line.split('\t').collect();
        if f.first() == Some(&"type") && f.len() == 18 {
            let int = |s: &str| s.parse::<i64>().unwrap_or(0);
            types.push(BuiltinType {
                oid: int(f[1]),
                name: f[2],
                len: int(f[3]),
                by_val: f[4] == "True",
                kind: f[5],
                category: f[6],
                preferred: f[7] == "True",
                delimiter: f[8],
                element: int(f[9]),
                array: int(f[10]),
                procs: [f[11], f[12], f[13], f[14]],
                align: f[15],
                storage: f[16],
                collation: int(f[17]),
            });
        } else if f.len() == 4 {
            let Some((schema, name)) = f[0].split_once('.') else { continue };
            let columns = f[3].split(',').filter_map(|c| c.split_once(':')).collect();
            relations.push(SystemRelation { schema, name, oid: f[1].parse().unwrap_or(0), kind: f[2], columns });
        }
    }
    Export { relations, types }
});

/// The relations of `pg_catalog` and `information_schema` that have rows; every other one is
/// empty.
const FILLED: &[&str] = &[
    "pg_catalog.pg_namespace",
    "pg_catalog.pg_class",
    "pg_catalog.pg_attribute",
    "pg_catalog.pg_type",
    "pg_catalog.pg_database",
    "pg_catalog.pg_roles",
    "pg_catalog.pg_user",
    "pg_catalog.pg_settings",
    "pg_catalog.pg_am",
    "pg_catalog.pg_tablespace",
    "pg_catalog.pg_views",
    "pg_catalog.pg_tables",
    "pg_catalog.pg_collation",
    "information_schema.schemata",
    "information_schema.tables",
    "information_schema.columns",
    "information_schema.views",
];

/// The names of the catalog's `regproc` columns (`typinput`, `typreceive`…): text here, which a
/// comparison with an oid number compares as PostgreSQL writes that oid (`-` for 0).
static REGPROC: LazyLock<HashSet<&'static str>> = LazyLock::new(|| {
    SYSTEM.relations.iter().flat_map(|r| r.columns.iter()).filter(|(_, t)| *t == "regproc").map(|(n, _)| *n).collect()
});

fn is_regproc_column(e: &Expr) -> bool {
    let name = match e {
        Expr::Identifier(i) => i.value.to_lowercase(),
        Expr::CompoundIdentifier(parts) => parts.last().map(|i| i.value.to_lowercase()).unwrap_or_default(),
        _ => return false,
    };
    REGPROC.contains(name.as_str())
}

/// Whether `schema.name` (lower case) is a relation of the system catalog.
pub fn is_system(qualified: &str) -> bool {
    SYSTEM.relations.iter().any(|r| qualified.split_once('.') == Some((r.schema, r.name)))
}

/// Whether `name` is a relation of `pg_catalog` (which PostgreSQL finds without a schema).
pub fn in_pg_catalog(name: &str) -> bool {
    SYSTEM.relations.iter().any(|r| r.schema == "pg_catalog" && r.name == name)
}

fn is_empty_relation(qualified: &str) -> bool {
    is_system(qualified) && !FILLED.contains(&qualified)
}

/// The Arrow type of a catalog column of PostgreSQL type `pg`.
fn arrow_type(pg: &str) -> DataType {
    let list = |t: DataType| DataType::List(Arc::new(Field::new("item", t, true)));
    match pg {
        "oid" | "xid" | "bigint" | "regclass" | "regtype" => DataType::Int64,
        "boolean" => DataType::Boolean,
        "smallint" => DataType::Int16,
        "integer" | "information_schema.cardinal_number" => DataType::Int32,
        "real" | "double precision" | "numeric" => DataType::Float64,
        "timestamp with time zone" | "information_schema.time_stamp" | "timestamp without time zone" => {
            DataType::Timestamp(TimeUnit::Microsecond, None)
        }
        "date" => DataType::Date32,
        "oid[]" | "oidvector" => list(DataType::Int64),
        "smallint[]" | "int2vector" => list(DataType::Int16),
        "text[]" | "aclitem[]" | "\"char\"[]" | "name[]" => list(DataType::Utf8),
        _ => DataType::Utf8,
    }
}

/// A column of a service table: the PostgreSQL type the doors answer its Arrow type with (the
/// mapping of `pg::pg_type` after the engine's `for_clients`), as (type oid, `format_type`).
pub fn client_type(t: &DataType) -> (i64, &'static str) {
    match t {
        DataType::Int8 | DataType::Int16 | DataType::UInt8 => (21, "smallint"),
        DataType::Int32 | DataType::UInt16 => (23, "integer"),
        t if t.is_integer() => (20, "bigint"),
        t if t.is_floating() || t.is_decimal() => (701, "double precision"),
        DataType::Dictionary(_, v) if v.is_numeric() => (701, "double precision"),
        DataType::Boolean => (16, "boolean"),
        DataType::Date32 | DataType::Date64 => (1082, "date"),
        DataType::Timestamp(_, _) => (1114, "timestamp without time zone"),
        _ => (25, "text"),
    }
}

/// The oid of the type `format_type` names `pg` (text for types the catalog does not list).
fn type_oid(pg: &str) -> i64 {
    let name = match pg {
        "boolean" => "bool",
        "smallint" => "int2",
        "integer" | "information_schema.cardinal_number" => "int4",
        "bigint" => "int8",
        "real" => "float4",
        "double precision" => "float8",
        "\"char\"" => "char",
        "timestamp with time zone" | "information_schema.time_stamp" => "timestamptz",
        "timestamp without time zone" => "timestamp",
        "text[]" => "_text",
        "oid[]" => "_oid",
        "smallint[]" => "_int2",
        "aclitem[]" => "_aclitem",
        "\"char\"[]" => "_char",
        "name[]" => "_name",
        "information_schema.sql_identifier" => "name",
        other => other,
    };
    SYSTEM.types.iter().find(|t| t.name == name).map_or(25, |t| t.oid)
}

/// `format_type(oid, typmod)`: a type's name as PostgreSQL writes it.
fn format_type(oid: i64) -> Option<String> {
    let t = SYSTEM.types.iter().find(|t| t.oid == oid)?;
    let base = |name: &str| -> String {
        match name {
            "bool" => "boolean".into(),
            "int2" => "smallint".into(),
            "int4" => "integer".into(),
            "int8" => "bigint".into(),
            "float4" => "real".into(),
            "float8" => "double precision".into(),
            "char" => "\"char\"".into(),
            "bpchar" => "character".into(),
            "varchar" => "character varying".into(),
            "timestamp" => "timestamp without time zone".into(),
            "timestamptz" => "timestamp with time zone".into(),
            "time" => "time without time zone".into(),
            other => other.into(),
        }
    };
    if t.category == "A" && t.element != 0 {
        let element = SYSTEM.types.iter().find(|e| e.oid == t.element)?;
        return Some(format!("{}[]", base(element.name)));
    }
    Some(base(t.name))
}

/// A service table as the catalog lists it.
pub struct Offered {
    pub name: String,
    pub schema: SchemaRef,
    pub rows: usize,
    /// A view (`queries/`), or the catalog table itself.
    pub view: bool,
    /// A view's defining query (`pg_get_viewdef`).
    pub definition: Option<String>,
}

/// Every relation the catalog lists: (oid, schema oid, name, kind, columns as (name, PostgreSQL
/// type, type oid)).
struct Listed {
    oid: i64,
    namespace: i64,
    schema: &'static str,
    name: String,
    kind: &'static str,
    columns: Vec<(String, String, i64)>,
    rows: usize,
    definition: Option<String>,
}

fn listed(offered: &[Offered]) -> Vec<Listed> {
    let mut out: Vec<Listed> = offered
        .iter()
        .enumerate()
        .map(|(i, t)| Listed {
            oid: FIRST_TABLE_OID + i as i64,
            namespace: PUBLIC,
            schema: "public",
            name: t.name.clone(),
            kind: if t.view { "v" } else { "r" },
            columns: t
                .schema
                .fields()
                .iter()
                .map(|f| {
                    let (oid, name) = client_type(f.data_type());
                    (f.name().clone(), name.to_string(), oid)
                })
                .collect(),
            rows: t.rows,
            definition: t.definition.clone(),
        })
        .collect();
    for r in &SYSTEM.relations {
        out.push(Listed {
            oid: r.oid,
            namespace: if r.schema == "pg_catalog" { PG_CATALOG } else { INFORMATION_SCHEMA },
            schema: r.schema,
            name: r.name.to_string(),
            kind: r.kind,
            columns: r.columns.iter().map(|(n, t)| (n.to_string(), t.to_string(), type_oid(t))).collect(),
            rows: 0,
            definition: None,
        });
    }
    out
}

/// A value of a catalog row.
#[derive(Clone)]
enum V {
    Null,
    Int(i64),
    Float(f64),
    Bool(bool),
    Text(String),
}

impl From<&str> for V {
    fn from(s: &str) -> V {
        V::Text(s.to_string())
    }
}
impl From<String> for V {
    fn from(s: String) -> V {
        V::Text(s)
    }
}
impl From<Option<String>> for V {
    fn from(s: Option<String>) -> V {
        s.map_or(V::Null, V::Text)
    }
}
impl From<i64> for V {
    fn from(n: i64) -> V {
        V::Int(n)
    }
}
impl From<bool> for V {
    fn from(b: bool) -> V {
        V::Bool(b)
    }
}

type Row = HashMap<&'static str, V>;

macro_rules! row {
    ($($k:literal => $v:expr),* $(,)?) => {{
        let mut r: Row = HashMap::new();
        $(r.insert($k, V::from($v));)*
        r
    }};
}

/// A column's value where a row does not give one: PostgreSQL's usual "nothing" of its type.
fn default_of(pg: &str, column: &str) -> V {
    match pg {
        "boolean" => V::Bool(false),
        "oid" | "xid" | "bigint" | "smallint" | "integer" => V::Int(0),
        "real" | "double precision" => V::Float(0.0),
        "\"char\"" => V::Text(String::new()),
        "regproc" => V::Text("-".into()),
        _ if column == "is_updatable" || column.starts_with("is_") => V::Text("NO".into()),
        _ => V::Null,
    }
}

/// A record batch of `columns` (name, PostgreSQL type) from `rows`.
fn batch(columns: &[(&str, &str)], rows: &[Row]) -> DfResult<RecordBatch> {
    let fields: Vec<Field> = columns.iter().map(|(n, t)| Field::new(*n, arrow_type(t), true)).collect();
    let schema = Arc::new(Schema::new(fields));
    let mut arrays: Vec<ArrayRef> = Vec::with_capacity(columns.len());
    for ((name, pg), field) in columns.iter().zip(schema.fields()) {
        let target = field.data_type();
        let values = rows.iter().map(|r| {
            let v = r.get(name).cloned().unwrap_or_else(|| default_of(pg, name));
            let scalar = match v {
                V::Null => ScalarValue::try_from(target)?,
                V::Int(n) => ScalarValue::Int64(Some(n)),
                V::Float(x) => ScalarValue::Float64(Some(x)),
                V::Bool(b) => ScalarValue::Boolean(Some(b)),
                V::Text(s) => ScalarValue::Utf8(Some(s)),
            };
            scalar.cast_to(target)
        });
        let values = values.collect::<DfResult<Vec<ScalarValue>>>()?;
        arrays.push(if values.is_empty() {
            datafusion::arrow::array::new_empty_array(target)
        } else {
            ScalarValue::iter_to_array(values)?
        });
    }
    Ok(RecordBatch::try_new(schema, arrays)?)
}

/// The rows of `schema.name` (empty for a relation [`FILLED`] does not list).
fn rows_of(qualified: &str, listed: &[Listed]) -> Vec<Row> {
    let schemas = [(PG_CATALOG, "pg_catalog"), (PUBLIC, "public"), (INFORMATION_SCHEMA, "information_schema")];
    let ours = || listed.iter().filter(|l| l.namespace == PUBLIC);
    let table_type = |l: &Listed| if l.kind == "v" { "VIEW" } else { "BASE TABLE" };
    match qualified {
        "pg_catalog.pg_namespace" => schemas
            .iter()
            .map(|(oid, name)| row! {"oid" => *oid, "nspname" => *name, "nspowner" => OWNER_OID})
            .collect(),
        "pg_catalog.pg_class" => listed
            .iter()
            .map(|l| {
                let table = l.kind == "r";
                row! {
                    "oid" => l.oid, "relname" => l.name.clone(), "relnamespace" => l.namespace,
                    "relowner" => OWNER_OID, "relam" => if table { 2 } else { 0 },
                    "relfilenode" => if table { l.oid } else { 0 }, "reltuples" => l.rows as i64,
                    "relpersistence" => "p", "relkind" => l.kind, "relnatts" => l.columns.len() as i64,
                    "relhasrules" => !table, "relispopulated" => true,
                    "relreplident" => if table { "d" } else { "n" },
                }
            })
            .collect(),
        "pg_catalog.pg_attribute" => listed
            .iter()
            .flat_map(|l| {
                l.columns.iter().enumerate().map(move |(i, (name, _, type_oid))| {
                    let t = SYSTEM.types.iter().find(|t| t.oid == *type_oid);
                    row! {
                        "attrelid" => l.oid, "attname" => name.clone(), "atttypid" => *type_oid,
                        "attstattarget" => -1, "attlen" => t.map_or(-1, |t| t.len), "attnum" => i as i64 + 1,
                        "attndims" => i64::from(t.is_some_and(|t| t.category == "A")), "attcacheoff" => -1,
                        "atttypmod" => -1, "attbyval" => t.is_some_and(|t| t.by_val),
                        "attalign" => t.map_or("i", |t| t.align), "attstorage" => t.map_or("x", |t| t.storage),
                        "attislocal" => true, "attcollation" => t.map_or(0, |t| t.collation),
                    }
                })
            })
            .collect(),
        "pg_catalog.pg_type" => SYSTEM
            .types
            .iter()
            .map(|t| {
                row! {
                    "oid" => t.oid, "typname" => t.name, "typnamespace" => PG_CATALOG, "typowner" => OWNER_OID,
                    "typlen" => t.len, "typbyval" => t.by_val, "typtype" => t.kind, "typcategory" => t.category,
                    "typispreferred" => t.preferred, "typisdefined" => true, "typdelim" => t.delimiter,
                    "typelem" => t.element, "typarray" => t.array, "typinput" => t.procs[0],
                    "typoutput" => t.procs[1], "typreceive" => t.procs[2], "typsend" => t.procs[3],
                    "typalign" => t.align, "typstorage" => t.storage, "typtypmod" => -1,
                    "typcollation" => t.collation,
                    "typsubscript" => if t.category == "A" { "array_subscript_handler" } else { "-" },
                }
            })
            .collect(),
        "pg_catalog.pg_database" => vec![row! {
            "oid" => DATABASE_OID, "datname" => "eco", "datdba" => OWNER_OID, "encoding" => 6,
            "datlocprovider" => "c", "datallowconn" => true, "datconnlimit" => -1, "datminmxid" => 1,
            "dattablespace" => 1663, "datcollate" => "C.UTF-8", "datctype" => "C.UTF-8",
        }],
        "pg_catalog.pg_roles" => vec![row! {
            "rolname" => OWNER, "rolinherit" => true, "rolcanlogin" => true, "rolconnlimit" => -1,
            "rolpassword" => "********", "oid" => OWNER_OID,
        }],
        "pg_catalog.pg_user" => vec![row! {"usename" => OWNER, "usesysid" => OWNER_OID, "passwd" => "********"}],
        "pg_catalog.pg_settings" => SETTINGS
            .iter()
            .map(|(name, value)| {
                row! {
                    "name" => *name, "setting" => *value, "category" => "Preset Options",
                    "short_desc" => *name, "context" => "internal", "vartype" => "string",
                    "source" => "default", "boot_val" => *value, "reset_val" => *value,
                }
            })
            .collect(),
        "pg_catalog.pg_am" => vec![
            row! {"oid" => 2, "amname" => "heap", "amhandler" => "heap_tableam_handler", "amtype" => "t"},
            row! {"oid" => 403, "amname" => "btree", "amhandler" => "bthandler", "amtype" => "i"},
        ],
        "pg_catalog.pg_tablespace" => vec![
            row! {"oid" => 1663, "spcname" => "pg_default", "spcowner" => OWNER_OID},
            row! {"oid" => 1664, "spcname" => "pg_global", "spcowner" => OWNER_OID},
        ],
        "pg_catalog.pg_collation" => vec![
            row! {"oid" => 100, "collname" => "default", "collnamespace" => PG_CATALOG, "collowner" => OWNER_OID,
            "collprovider" => "d", "collisdeterministic" => true, "collencoding" => -1},
            row! {"oid" => 950, "collname" => "C", "collnamespace" => PG_CATALOG, "collowner" => OWNER_OID,
            "collprovider" => "c", "collisdeterministic" => true, "collencoding" => -1,
            "collcollate" => "C", "collctype" => "C"},
        ],
        "pg_catalog.pg_views" => listed
            .iter()
            .filter(|l| l.kind == "v")
            .map(|l| {
                row! {"schemaname" => l.schema, "viewname" => l.name.clone(), "viewowner" => OWNER,
                "definition" => l.definition.clone()}
            })
            .collect(),
        "pg_catalog.pg_tables" => listed
            .iter()
            .filter(|l| l.kind == "r")
            .map(|l| row! {"schemaname" => l.schema, "tablename" => l.name.clone(), "tableowner" => OWNER})
            .collect(),
        "information_schema.schemata" => schemas
            .iter()
            .map(|(_, name)| row! {"catalog_name" => "eco", "schema_name" => *name, "schema_owner" => OWNER})
            .collect(),
        "information_schema.tables" => listed
            .iter()
            .map(|l| {
                row! {
                    "table_catalog" => "eco", "table_schema" => l.schema, "table_name" => l.name.clone(),
                    "table_type" => table_type(l), "is_insertable_into" => "NO", "is_typed" => "NO",
                }
            })
            .collect(),
        "information_schema.views" => listed
            .iter()
            .filter(|l| l.kind == "v")
            .map(|l| {
                row! {
                    "table_catalog" => "eco", "table_schema" => l.schema, "table_name" => l.name.clone(),
                    "check_option" => "NONE", "view_definition" => l.definition.clone(),
                }
            })
            .collect(),
        "information_schema.columns" => ours()
            .chain(listed.iter().filter(|l| l.namespace != PUBLIC))
            .flat_map(|l| {
                l.columns.iter().enumerate().map(move |(i, (name, pg, type_oid))| {
                    let t = SYSTEM.types.iter().find(|t| t.oid == *type_oid);
                    let array = t.is_some_and(|t| t.category == "A");
                    let mut r = row! {
                        "table_catalog" => "eco", "table_schema" => l.schema, "table_name" => l.name.clone(),
                        "column_name" => name.clone(), "ordinal_position" => i as i64 + 1, "is_nullable" => "YES",
                        "data_type" => if array { "ARRAY".to_string() } else { pg.clone() },
                        "udt_catalog" => "eco", "udt_schema" => "pg_catalog",
                        "udt_name" => t.map_or("text", |t| t.name), "dtd_identifier" => (i + 1).to_string(),
                        "is_self_referencing" => "NO", "is_identity" => "NO", "is_generated" => "NEVER",
                        "is_updatable" => "NO",
                    };
                    let precision = match pg.as_str() {
                        "smallint" => Some((16, 2, Some(0))),
                        "integer" => Some((32, 2, Some(0))),
                        "bigint" => Some((64, 2, Some(0))),
                        "real" => Some((24, 2, None)),
                        "double precision" => Some((53, 2, None)),
                        _ => None,
                    };
                    if let Some((p, radix, scale)) = precision {
                        r.insert("numeric_precision", V::Int(p));
                        r.insert("numeric_precision_radix", V::Int(radix));
                        r.insert("numeric_scale", scale.map_or(V::Null, V::Int));
                    } else {
                        for c in ["numeric_precision", "numeric_precision_radix", "numeric_scale"] {
                            r.insert(c, V::Null);
                        }
                    }
                    match pg.as_str() {
                        "date" => {
                            r.insert("datetime_precision", V::Int(0));
                        }
                        p if p.starts_with("timestamp") => {
                            r.insert("datetime_precision", V::Int(6));
                        }
                        "text" => {
                            r.insert("character_octet_length", V::Int(1_073_741_824));
                        }
                        _ => {}
                    }
                    if matches!(pg.as_str(), "text" | "name") {
                        r.insert("collation_name", V::Null);
                    }
                    r.insert("ordinal_position", V::Int(i as i64 + 1));
                    r
                })
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// The settings `pg_settings` and `current_setting` answer (the door's own `SHOW` answers the
/// session's values).
pub const SETTINGS: &[(&str, &str)] = &[
    ("server_version", "16.0"),
    ("server_version_num", "160000"),
    ("server_encoding", "UTF8"),
    ("client_encoding", "UTF8"),
    ("DateStyle", "ISO, MDY"),
    ("TimeZone", "UTC"),
    ("integer_datetimes", "on"),
    ("standard_conforming_strings", "on"),
    ("search_path", "\"$user\", public"),
    ("default_transaction_read_only", "on"),
    ("transaction_read_only", "on"),
    ("max_identifier_length", "63"),
    ("lc_collate", "C.UTF-8"),
    ("lc_ctype", "C.UTF-8"),
    ("max_connections", "256"),
    ("block_size", "8192"),
];

/// Registers the schemas `pg_catalog` and `information_schema` (listing `offered`) and the
/// catalog's functions in `ctx`, whose default catalog is `eco`.
pub fn install(ctx: &SessionContext, offered: &[Offered]) -> Result<(), String> {
    let listed = listed(offered);
    let catalog = ctx.catalog("eco").ok_or("no catalog eco")?;
    for schema in ["pg_catalog", "information_schema"] {
        let provider = Arc::new(MemorySchemaProvider::new());
        for r in SYSTEM.relations.iter().filter(|r| r.schema == schema) {
            let qualified = format!("{}.{}", r.schema, r.name);
            let b = batch(&r.columns, &rows_of(&qualified, &listed)).map_err(|e| format!("{qualified}: {e}"))?;
            let table = MemTable::try_new(b.schema(), vec![vec![b]]).map_err(|e| e.to_string())?;
            datafusion::catalog::SchemaProvider::register_table(provider.as_ref(), r.name.to_string(), Arc::new(table))
                .map_err(|e| e.to_string())?;
        }
        catalog.register_schema(schema, provider).map_err(|e| e.to_string())?;
    }
    let relations: Arc<BTreeMap<i64, (i64, String)>> =
        Arc::new(listed.iter().map(|l| (l.oid, (l.namespace, format!("{}.{}", l.schema, l.name)))).collect());
    let definitions: Arc<BTreeMap<i64, String>> =
        Arc::new(listed.iter().filter_map(|l| Some((l.oid, l.definition.clone()?))).collect());
    for f in functions(&relations, &definitions) {
        ctx.register_udf(ScalarUDF::new_from_impl(f));
    }
    Ok(())
}

mod functions;
mod syntax;

use functions::functions;
#[cfg(test)]
use functions::quote_ident;
pub use functions::FUNCTIONS;
pub use syntax::{prepare, rewrite};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_export_lists_the_relations_and_types_clients_read() {
        for r in ["pg_catalog.pg_class", "pg_catalog.pg_attribute", "information_schema.columns", "pg_catalog.pg_index"]
        {
            assert!(is_system(r), "{r}");
        }
        assert!(!is_system("public.catalog"));
        assert_eq!(format_type(20).as_deref(), Some("bigint"));
        assert_eq!(format_type(1009).as_deref(), Some("text[]"));
        assert_eq!(format_type(701).as_deref(), Some("double precision"));
        assert_eq!(type_oid("timestamp without time zone"), 1114);
        assert_eq!(quote_ident("catalog"), "catalog");
        assert_eq!(quote_ident("Marca x"), "\"Marca x\"");
    }

    #[test]
    fn every_catalog_relation_builds() {
        let offered = [Offered {
            name: "catalog".into(),
            schema: Arc::new(Schema::new(vec![Field::new("ano", DataType::Int64, true)])),
            rows: 3,
            view: false,
            definition: None,
        }];
        let listed = listed(&offered);
        for r in &SYSTEM.relations {
            let q = format!("{}.{}", r.schema, r.name);
            let b = batch(&r.columns, &rows_of(&q, &listed)).unwrap_or_else(|e| panic!("{q}: {e}"));
            assert_eq!(b.num_columns(), r.columns.len(), "{q}");
        }
    }
}
