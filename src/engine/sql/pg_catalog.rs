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
            .map(|l| row! {"schemaname" => l.schema, "viewname" => l.name.clone(), "viewowner" => OWNER})
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
                    "check_option" => "NONE",
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
    for f in functions(&relations) {
        ctx.register_udf(ScalarUDF::new_from_impl(f));
    }
    Ok(())
}

type Body = Arc<dyn Fn(&[ScalarValue]) -> ScalarValue + Send + Sync>;

/// A catalog function: a name, its arities, its result type and a body over one row's values.
struct CatalogFunction {
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
fn quote_ident(name: &str) -> String {
    let plain = name.chars().next().is_some_and(|c| c.is_ascii_lowercase() || c == '_')
        && name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    if plain {
        name.to_string()
    } else {
        format!("\"{}\"", name.replace('"', "\"\""))
    }
}

fn functions(relations: &Arc<BTreeMap<i64, (i64, String)>>) -> Vec<CatalogFunction> {
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
        f("pg_get_viewdef", &[1, 2], DataType::Utf8, Arc::clone(&null_text)),
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

/// The last part of a type's name, in lower case (`pg_catalog.regclass` is `regclass`).
fn type_name(t: &SqlType) -> Option<String> {
    match t {
        SqlType::Custom(name, _) => name.0.last().map(|p| match p {
            ObjectNamePart::Identifier(i) => i.value.to_lowercase(),
            other => other.to_string().to_lowercase(),
        }),
        SqlType::Regclass => Some("regclass".into()),
        SqlType::Text => Some("text".into()),
        SqlType::Char(_) | SqlType::Character(_) => Some("char".into()),
        _ => None,
    }
}

fn call(name: &str, args: Vec<Expr>) -> Expr {
    Expr::Function(Function {
        name: ObjectName::from(vec![Ident::new(name)]),
        uses_odbc_syntax: false,
        parameters: FunctionArguments::None,
        args: FunctionArguments::List(FunctionArgumentList {
            duplicate_treatment: None,
            args: args.into_iter().map(|e| FunctionArg::Unnamed(FunctionArgExpr::Expr(e))).collect(),
            clauses: vec![],
        }),
        filter: None,
        null_treatment: None,
        over: None,
        within_group: vec![],
    })
}

fn cast(expr: Expr, to: SqlType) -> Expr {
    Expr::Cast { kind: CastKind::Cast, expr: Box::new(expr), data_type: to, array: false, format: None }
}

fn is_text_literal(e: &Expr) -> bool {
    matches!(e, Expr::Value(v) if matches!(v.value, Value::SingleQuotedString(_)))
}

/// Whether `left <> right` compares a column's collation with its type's.
fn collations(left: &Expr, right: &Expr) -> bool {
    let (l, r) = (left.to_string().to_lowercase(), right.to_string().to_lowercase());
    (l.ends_with("attcollation") && r.ends_with("typcollation"))
        || (l.ends_with("typcollation") && r.ends_with("attcollation"))
}

/// Rewrites the syntax of catalog queries (see the module's documentation); `user` is what
/// `current_user` answers.
struct CatalogSyntax<'a> {
    user: &'a str,
}

impl VisitorMut for CatalogSyntax<'_> {
    type Break = ();

    fn post_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<()> {
        let replaced = match expr {
            Expr::BinaryOp { op: BinaryOperator::PGCustomBinaryOperator(parts), left, right } => {
                let op = match parts.last().map(String::as_str) {
                    Some("~") => Some(BinaryOperator::PGRegexMatch),
                    Some("~*") => Some(BinaryOperator::PGRegexIMatch),
                    Some("!~") => Some(BinaryOperator::PGRegexNotMatch),
                    Some("!~*") => Some(BinaryOperator::PGRegexNotIMatch),
                    Some("=") => Some(BinaryOperator::Eq),
                    Some("<>") => Some(BinaryOperator::NotEq),
                    Some("<") => Some(BinaryOperator::Lt),
                    Some(">") => Some(BinaryOperator::Gt),
                    Some("<=") => Some(BinaryOperator::LtEq),
                    Some(">=") => Some(BinaryOperator::GtEq),
                    Some("~~") => Some(BinaryOperator::PGLikeMatch),
                    Some("||") => Some(BinaryOperator::StringConcat),
                    _ => None,
                };
                op.map(|op| Expr::BinaryOp { left: left.clone(), op, right: right.clone() })
            }
            Expr::Collate { expr: inner, .. } => Some((**inner).clone()),
            // Every column here has its type's collation (psql asks for those that differ).
            Expr::BinaryOp { left, op: BinaryOperator::NotEq, right } if collations(left, right) => {
                Some(Expr::Value(Value::Boolean(false).into()))
            }
            // `typreceive != 0`: a regproc (text here) against an oid number.
            Expr::BinaryOp { left, op, right } if is_regproc_column(left) || is_regproc_column(right) => {
                let as_text = |e: &Expr| match e {
                    Expr::Value(v) => match &v.value {
                        Value::Number(n, _) => Some(Expr::Value(
                            Value::SingleQuotedString(if n == "0" { "-".into() } else { n.clone() }).into(),
                        )),
                        _ => None,
                    },
                    _ => None,
                };
                match (as_text(left), as_text(right)) {
                    (Some(l), None) => Some(Expr::BinaryOp { left: Box::new(l), op: op.clone(), right: right.clone() }),
                    (None, Some(r)) => Some(Expr::BinaryOp { left: left.clone(), op: op.clone(), right: Box::new(r) }),
                    _ => None,
                }
            }
            // `x = ANY('{a,b}')`: an array written as text.
            Expr::AnyOp { left, compare_op: BinaryOperator::Eq, right, .. } => match right.as_ref() {
                Expr::Value(v) => match &v.value {
                    Value::SingleQuotedString(t) if t.starts_with('{') && t.ends_with('}') => {
                        let items = t[1..t.len() - 1]
                            .split(',')
                            .filter(|i| !i.is_empty())
                            .map(|i| {
                                Expr::Value(Value::SingleQuotedString(i.trim().trim_matches('"').to_string()).into())
                            })
                            .collect();
                        Some(Expr::InList { expr: left.clone(), list: items, negated: false })
                    }
                    _ => None,
                },
                _ => None,
            },
            Expr::Cast { expr: inner, data_type, .. } => match type_name(data_type).as_deref() {
                Some("regclass") if is_text_literal(inner) => Some(call("to_regclass", vec![(**inner).clone()])),
                Some(
                    "regclass" | "regtype" | "regproc" | "regprocedure" | "regnamespace" | "regrole" | "oid" | "xid",
                ) => Some(cast((**inner).clone(), SqlType::BigInt(None))),
                Some("name" | "char" | "bpchar") => Some(cast((**inner).clone(), SqlType::Text)),
                Some("text") => match inner.as_ref() {
                    // `x::regclass::text` and `x::regtype::text`: the relation's or type's name.
                    Expr::Cast { expr: oid, data_type: SqlType::BigInt(None), .. } => {
                        Some(call("eco_relation_name", vec![(**oid).clone()]))
                    }
                    _ => Some(cast((**inner).clone(), SqlType::Text)),
                },
                _ => None,
            },
            Expr::Function(f) if matches!(f.args, FunctionArguments::None) => {
                let name = f.name.to_string().to_lowercase();
                matches!(name.as_str(), "current_user" | "session_user" | "user" | "current_role")
                    .then(|| Expr::Value(Value::SingleQuotedString(self.user.to_string()).into()))
            }
            _ => None,
        };
        if let Some(new) = replaced {
            *expr = new;
        }
        ControlFlow::Continue(())
    }
}

/// A scalar subquery over the catalog that does not aggregate: its one value taken with `max`,
/// which is the value (PostgreSQL would fail on a second row; these catalog lookups have at
/// most one), because DataFusion plans a correlated scalar subquery only when it aggregates.
struct CatalogScalarSubqueries;

impl VisitorMut for CatalogScalarSubqueries {
    type Break = ();

    fn pre_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<()> {
        let Expr::Subquery(query) = expr else { return ControlFlow::Continue(()) };
        let mut relations = Relations(Vec::new());
        let _ = Visit::visit(query.as_ref(), &mut relations);
        if relations.0.is_empty() || !relations.0.iter().all(|r| is_system(r)) {
            return ControlFlow::Continue(());
        }
        let SetExpr::Select(select) = query.body.as_mut() else { return ControlFlow::Continue(()) };
        let plain = matches!(&select.group_by, GroupByExpr::Expressions(e, m) if e.is_empty() && m.is_empty());
        if !plain || select.having.is_some() || select.projection.len() != 1 || query.limit_clause.is_some() {
            return ControlFlow::Continue(());
        }
        let mut aggregate = CallsAggregate(false, 0);
        let _ = Visit::visit(&select.projection, &mut aggregate);
        if aggregate.0 {
            return ControlFlow::Continue(());
        }
        if let SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } = &mut select.projection[0] {
            let inner = std::mem::replace(e, Expr::Value(Value::Null.into()));
            *e = call("max", vec![inner]);
        }
        ControlFlow::Continue(())
    }
}

/// `x::regclass` as an item of a SELECT: the relation's name, as PostgreSQL writes a regclass.
struct RegclassItems;

impl VisitorMut for RegclassItems {
    type Break = ();

    fn pre_visit_query(&mut self, query: &mut Query) -> ControlFlow<()> {
        if let SetExpr::Select(select) = query.body.as_mut() {
            for item in &mut select.projection {
                let (alias, e) = match item {
                    SelectItem::UnnamedExpr(e) => (super::names::figure(e), &*e),
                    SelectItem::ExprWithAlias { expr, alias } => (Some(alias.value.clone()), &*expr),
                    _ => continue,
                };
                if let Expr::Cast { expr: inner, data_type, .. } = e {
                    if type_name(data_type).as_deref() == Some("regclass") && !is_text_literal(inner) {
                        let name = alias;
                        let call = call("eco_relation_name", vec![(**inner).clone()]);
                        *item = SelectItem::ExprWithAlias {
                            expr: call,
                            alias: Ident::with_quote('"', name.unwrap_or_else(|| "regclass".into())),
                        };
                    }
                }
            }
        }
        ControlFlow::Continue(())
    }
}

/// The relations a query reads, schema-qualified as the sandbox resolved them.
struct Relations(Vec<String>);

impl Visitor for Relations {
    type Break = ();

    fn pre_visit_table_factor(&mut self, factor: &TableFactor) -> ControlFlow<()> {
        // A table function is no relation: a query over one and an empty relation is empty.
        if let TableFactor::Table { name, args: None, .. } = factor {
            self.0.push(name.to_string().to_lowercase());
        }
        ControlFlow::Continue(())
    }
}

/// Scalar subqueries that read only empty catalog relations become NULL, which is what they
/// answer.
struct EmptySubqueries;

impl VisitorMut for EmptySubqueries {
    type Break = ();

    fn pre_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<()> {
        let reads_nothing = |query: &Query| {
            let mut relations = Relations(Vec::new());
            let _ = Visit::visit(query, &mut relations);
            let simple = matches!(query.body.as_ref(), SetExpr::Select(_));
            simple && !relations.0.is_empty() && relations.0.iter().all(|r| is_empty_relation(r))
        };
        match expr {
            Expr::Subquery(query) if reads_nothing(query) => *expr = Expr::Value(Value::Null.into()),
            // `ARRAY(subquery)` over no rows: an empty array.
            Expr::Function(f) if f.name.to_string().eq_ignore_ascii_case("array") => {
                if let FunctionArguments::Subquery(query) = &f.args {
                    if reads_nothing(query) {
                        *expr = Expr::Value(Value::SingleQuotedString("{}".into()).into());
                    }
                }
            }
            _ => {}
        }
        ControlFlow::Continue(())
    }
}

/// Aggregate functions: a SELECT that calls one without GROUP BY answers a row even over none.
const AGGREGATES: &[&str] = &[
    "count",
    "sum",
    "min",
    "max",
    "avg",
    "array_agg",
    "string_agg",
    "bool_and",
    "bool_or",
    "every",
    "json_agg",
    "jsonb_agg",
    "json_object_agg",
    "first_value",
    "last_value",
    "stddev",
    "variance",
];

/// Whether expressions call an aggregate (outside their subqueries).
struct CallsAggregate(bool, usize);

impl Visitor for CallsAggregate {
    type Break = ();

    fn pre_visit_query(&mut self, _query: &Query) -> ControlFlow<()> {
        self.1 += 1;
        ControlFlow::Continue(())
    }

    fn post_visit_query(&mut self, _query: &Query) -> ControlFlow<()> {
        self.1 -= 1;
        ControlFlow::Continue(())
    }

    fn pre_visit_expr(&mut self, expr: &Expr) -> ControlFlow<()> {
        if self.1 > 0 {
            return ControlFlow::Continue(());
        }
        if let Expr::Function(f) = expr {
            let name = f.name.0.last().map(|p| p.to_string().to_lowercase()).unwrap_or_default();
            if AGGREGATES.contains(&name.as_str()) {
                self.0 = true;
                return ControlFlow::Break(());
            }
        }
        ControlFlow::Continue(())
    }
}

/// Whether a query's body was reduced to no rows by [`blank_select`].
fn is_blank(body: &SetExpr) -> bool {
    match body {
        SetExpr::Select(s) => {
            s.from.is_empty() && matches!(&s.selection, Some(Expr::Value(v)) if v.value == Value::Boolean(false))
        }
        SetExpr::SetOperation { left, right, .. } => is_blank(left) && is_blank(right),
        SetExpr::Query(q) => is_blank(&q.body),
        _ => false,
    }
}

fn empty_factor(factor: &TableFactor, blank_ctes: &HashSet<String>) -> bool {
    match factor {
        TableFactor::Table { name, args: None, .. } => {
            let name = name.to_string().to_lowercase();
            is_empty_relation(&name) || blank_ctes.contains(&name)
        }
        TableFactor::Derived { subquery, .. } => is_blank(&subquery.body),
        _ => false,
    }
}

/// Whether a FROM item has no rows: its first relation is an empty catalog relation, or one
/// inner- or cross-joined to it is (and no right or full join brings rows back).
fn from_item_is_empty(item: &TableWithJoins, blank_ctes: &HashSet<String>) -> bool {
    let empty_factor = |f: &TableFactor| empty_factor(f, blank_ctes);
    let mut empty = empty_factor(&item.relation);
    for join in &item.joins {
        match &join.join_operator {
            JoinOperator::Join(_) | JoinOperator::Inner(_) | JoinOperator::CrossJoin(_) => {
                empty |= empty_factor(&join.relation);
            }
            JoinOperator::Left(_) | JoinOperator::LeftOuter(_) | JoinOperator::Semi(_) | JoinOperator::LeftSemi(_) => {
                empty |= empty_factor(&join.relation)
                    && matches!(join.join_operator, JoinOperator::Semi(_) | JoinOperator::LeftSemi(_));
            }
            _ => return false,
        }
    }
    empty
}

/// A SELECT over an empty catalog relation (no aggregate, no GROUP BY): its rows are none, so
/// its items become NULLs of the same names and its FROM goes (what it called — set-returning
/// functions, table functions — is never run).
fn blank_select(select: &mut Select, blank_ctes: &HashSet<String>) -> bool {
    // GROUP BY over no rows answers none; an aggregate without it answers one row.
    let grouped = match &select.group_by {
        GroupByExpr::Expressions(e, modifiers) if e.is_empty() && modifiers.is_empty() => false,
        GroupByExpr::Expressions(e, modifiers)
            if modifiers.is_empty()
                && !e.iter().any(|e| matches!(e, Expr::Rollup(_) | Expr::Cube(_) | Expr::GroupingSets(_))) =>
        {
            true
        }
        _ => return false,
    };
    if select.from.is_empty() || !select.from.iter().any(|item| from_item_is_empty(item, blank_ctes)) {
        return false;
    }
    if !grouped {
        let mut aggregate = CallsAggregate(false, 0);
        let _ = Visit::visit(&select.projection, &mut aggregate);
        if aggregate.0 || select.having.is_some() {
            return false;
        }
    }
    let mut items = Vec::with_capacity(select.projection.len());
    let mut taken = HashSet::new();
    for (i, item) in select.projection.iter().enumerate() {
        let name = match item {
            SelectItem::ExprWithAlias { alias, .. } => super::names::ident_name(alias),
            SelectItem::UnnamedExpr(e) => super::names::figure(e).unwrap_or_else(|| super::names::UNNAMED.into()),
            _ => return false,
        };
        // A name repeated in one SELECT is told apart as a positional answer's (see names::MARK).
        let name = if taken.insert(name.clone()) { name } else { format!("{name}{}{i}", super::names::MARK) };
        items.push(SelectItem::ExprWithAlias {
            expr: Expr::Value(Value::Null.into()),
            alias: Ident::with_quote('"', name),
        });
    }
    select.group_by = GroupByExpr::Expressions(vec![], vec![]);
    select.having = None;
    select.projection = items;
    select.from = Vec::new();
    select.selection = Some(Expr::Value(Value::Boolean(false).into()));
    select.distinct = None;
    true
}

fn blank_body(body: &mut SetExpr, blank_ctes: &HashSet<String>) -> bool {
    match body {
        SetExpr::Select(select) => blank_select(select, blank_ctes),
        SetExpr::SetOperation { left, right, .. } => {
            let l = blank_body(left, blank_ctes);
            let r = blank_body(right, blank_ctes);
            l && r
        }
        SetExpr::Query(query) => blank_body(&mut query.body, blank_ctes),
        _ => false,
    }
}

/// Reduces the queries over empty catalog relations, CTEs and derived tables included.
struct NoRows(HashSet<String>);

impl VisitorMut for NoRows {
    type Break = ();

    // Inner queries first: a derived table reduced to no rows empties the query around it.
    fn post_visit_query(&mut self, query: &mut Query) -> ControlFlow<()> {
        if let Some(with) = &mut query.with {
            for cte in &mut with.cte_tables {
                if blank_body(&mut cte.query.body, &self.0) || is_blank(&cte.query.body) {
                    cte.query.order_by = None;
                    self.0.insert(cte.alias.name.value.to_lowercase());
                }
            }
        }
        if blank_body(&mut query.body, &self.0) {
            query.order_by = None;
        }
        ControlFlow::Continue(())
    }
}

/// Before the sandbox's check: the names of `pg_catalog`'s relations qualified (see
/// [`qualify`]), and the parts of a query that read an empty catalog relation reduced to what
/// they answer — NULL, an empty array, no rows — so what they would have called is never checked
/// nor run.
pub fn prepare(statement: &mut Statement, local: &HashSet<String>) {
    let _ = VisitMut::visit(statement, &mut Qualify { local });
    let _ = VisitMut::visit(statement, &mut NoRows(HashSet::new()));
    let _ = VisitMut::visit(statement, &mut EmptySubqueries);
}

struct Qualify<'a> {
    local: &'a HashSet<String>,
}

impl VisitorMut for Qualify<'_> {
    type Break = ();

    fn pre_visit_table_factor(&mut self, factor: &mut TableFactor) -> ControlFlow<()> {
        if let TableFactor::Table { name, args: None, .. } = factor {
            qualify(name, self.local);
        }
        ControlFlow::Continue(())
    }
}

/// Unqualified names of `pg_catalog`'s relations (not the query's CTEs nor the service's
/// tables) qualified, as PostgreSQL finds them; `information_schema.x` kept as is.
fn qualify(name: &mut ObjectName, local: &HashSet<String>) -> Option<String> {
    let parts: Vec<String> = name
        .0
        .iter()
        .map(|p| match p {
            ObjectNamePart::Identifier(i) => super::names::ident_name(i),
            other => other.to_string().to_lowercase(),
        })
        .collect();
    let parts: Vec<&str> = match parts.first().map(String::as_str) {
        Some("eco") if parts.len() == 3 => parts[1..].iter().map(String::as_str).collect(),
        _ => parts.iter().map(String::as_str).collect(),
    };
    let qualified = match parts[..] {
        [one] if in_pg_catalog(one) && !local.contains(one) => format!("pg_catalog.{one}"),
        [schema, table] => format!("{schema}.{table}"),
        _ => return None,
    };
    if !is_system(&qualified) {
        return None;
    }
    let (schema, table) = qualified.split_once('.')?;
    *name = ObjectName::from(vec![Ident::new(schema), Ident::new(table)]);
    Some(qualified)
}

/// Rewrites a checked statement's catalog syntax (see the module's documentation).
pub fn rewrite(statement: &mut Statement, user: &str) {
    let _ = VisitMut::visit(statement, &mut RegclassItems);
    let _ = VisitMut::visit(statement, &mut CatalogScalarSubqueries);
    let _ = VisitMut::visit(statement, &mut CatalogSyntax { user });
}

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
        }];
        let listed = listed(&offered);
        for r in &SYSTEM.relations {
            let q = format!("{}.{}", r.schema, r.name);
            let b = batch(&r.columns, &rows_of(&q, &listed)).unwrap_or_else(|e| panic!("{q}: {e}"));
            assert_eq!(b.num_columns(), r.columns.len(), "{q}");
        }
    }
}
