//! What the Flight SQL door tells drivers about itself and the data (`GetCatalogs`,
//! `GetDbSchemas`, `GetTables`, `GetTableTypes`, `GetSqlInfo`, `GetXdbcTypeInfo`): catalog `eco`,
//! schema `public`, the table `catalog` (TABLE) and each view (VIEW), as the PostgreSQL door's
//! `information_schema` lists them, with the Arrow schemas their queries answer with.

use std::sync::{Arc, LazyLock, Mutex};

use arrow_flight::sql::metadata::{
    SqlInfoData, SqlInfoDataBuilder, XdbcTypeInfo, XdbcTypeInfoData, XdbcTypeInfoDataBuilder,
};
use arrow_flight::sql::{
    CommandGetCatalogs, CommandGetDbSchemas, CommandGetTableTypes, CommandGetTables, Nullable, Searchable, SqlInfo,
    XdbcDataType, XdbcDatetimeSubcode,
};
use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::{Schema, SchemaRef};
use tonic::Status;

use crate::engine::dataset::snapshot::DatasetInfo;
use crate::engine::sql::worker::offered_tables;

/// The catalog (database) name drivers see.
pub const CATALOG: &str = "eco";
/// The schema the tables are in.
pub const SCHEMA: &str = "public";

fn internal(e: impl std::fmt::Display) -> Status {
    super::internal(e)
}

/// One table as listed: its name, type (`TABLE` or `VIEW`) and columns (empty when not asked).
#[derive(Debug, Clone)]
pub struct Table {
    pub name: String,
    pub kind: &'static str,
    pub schema: SchemaRef,
}

/// The tables of the last dataset version whose columns were described (describing them runs
/// the SQL planner once per table and version).
#[derive(Default)]
pub struct Tables(Mutex<Option<(String, Arc<Vec<Table>>)>>);

impl Tables {
    /// The tables of the version `info` describes, without their columns.
    pub fn names(info: &DatasetInfo) -> Arc<Vec<Table>> {
        Arc::new(
            offered_tables(&info.views)
                .into_iter()
                .map(|name| Table {
                    kind: if name == "catalog" { "TABLE" } else { "VIEW" },
                    name,
                    schema: Arc::new(Schema::empty()),
                })
                .collect(),
        )
    }

    /// The tables of `info`'s version with their columns, when described already.
    pub fn cached(&self, info: &DatasetInfo) -> Option<Arc<Vec<Table>>> {
        let cached = self.0.lock().unwrap_or_else(|e| e.into_inner());
        cached.as_ref().filter(|(v, _)| *v == info.version).map(|(_, t)| Arc::clone(t))
    }

    /// Keeps the described tables of `info`'s version.
    pub fn keep(&self, info: &DatasetInfo, tables: Arc<Vec<Table>>) {
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = Some((info.version.clone(), tables));
    }
}

/// The answer to `GetCatalogs`.
pub fn catalogs(query: CommandGetCatalogs) -> Result<(SchemaRef, RecordBatch), Status> {
    let mut builder = query.into_builder();
    builder.append(CATALOG);
    let schema = builder.schema();
    Ok((schema, builder.build().map_err(internal)?))
}

/// The answer to `GetDbSchemas` (its filters applied by the builder).
pub fn db_schemas(query: CommandGetDbSchemas) -> Result<(SchemaRef, RecordBatch), Status> {
    let mut builder = query.into_builder();
    builder.append(CATALOG, SCHEMA);
    let schema = builder.schema();
    Ok((schema, builder.build().map_err(internal)?))
}

/// The answer to `GetTables` (its filters applied by the builder; columns when asked).
pub fn tables(query: CommandGetTables, tables: &[Table]) -> Result<(SchemaRef, RecordBatch), Status> {
    let mut builder = query.into_builder();
    for t in tables {
        builder.append(CATALOG, SCHEMA, &t.name, t.kind, &t.schema).map_err(internal)?;
    }
    let schema = builder.schema();
    Ok((schema, builder.build().map_err(internal)?))
}

/// The answer to `GetTableTypes`.
pub fn table_types(query: CommandGetTableTypes) -> Result<(SchemaRef, RecordBatch), Status> {
    let mut builder = query.into_builder();
    builder.append("TABLE");
    builder.append("VIEW");
    let schema = builder.schema();
    Ok((schema, builder.build().map_err(internal)?))
}

static SQL_INFO: LazyLock<SqlInfoData> = LazyLock::new(|| {
    let mut b = SqlInfoDataBuilder::new();
    b.append(SqlInfo::FlightSqlServerName, "eco-insights");
    b.append(SqlInfo::FlightSqlServerVersion, env!("CARGO_PKG_VERSION"));
    b.append(SqlInfo::FlightSqlServerArrowVersion, "1.5");
    b.append(SqlInfo::FlightSqlServerReadOnly, true);
    b.append(SqlInfo::FlightSqlServerSql, true);
    b.append(SqlInfo::FlightSqlServerSubstrait, false);
    b.append(SqlInfo::FlightSqlServerTransaction, 0i32);
    b.append(SqlInfo::FlightSqlServerCancel, false);
    b.append(SqlInfo::FlightSqlServerBulkIngestion, false);
    b.append(SqlInfo::SqlDdlCatalog, false);
    b.append(SqlInfo::SqlDdlSchema, false);
    b.append(SqlInfo::SqlDdlTable, false);
    // PostgreSQL's dialect: unquoted identifiers fold to lower case, quoted ones keep theirs.
    b.append(SqlInfo::SqlIdentifierCase, 2i32);
    b.append(SqlInfo::SqlIdentifierQuoteChar, "\"");
    b.append(SqlInfo::SqlQuotedIdentifierCase, 3i32);
    b.append(SqlInfo::SqlAllTablesAreSelectable, true);
    b.append(SqlInfo::SqlNullOrdering, 1i32);
    b.append(SqlInfo::SqlSearchStringEscape, "\\");
    b.append(SqlInfo::SqlExtraNameCharacters, "");
    b.append(SqlInfo::SqlSupportsColumnAliasing, true);
    b.append(SqlInfo::SqlNullPlusNullIsNull, true);
    b.append(SqlInfo::SqlSupportsTableCorrelationNames, true);
    b.append(SqlInfo::SqlSupportsOrderByUnrelated, true);
    b.append(SqlInfo::SqlSupportsLikeEscapeClause, true);
    b.append(SqlInfo::SqlSupportsNonNullableColumns, true);
    b.append(SqlInfo::SqlCatalogTerm, "database");
    b.append(SqlInfo::SqlSchemaTerm, "schema");
    b.append(SqlInfo::SqlProcedureTerm, "function");
    b.append(SqlInfo::SqlCatalogAtStart, true);
    b.append(SqlInfo::SqlSelectForUpdateSupported, false);
    b.append(SqlInfo::SqlStoredProceduresSupported, false);
    b.append(SqlInfo::SqlCorrelatedSubqueriesSupported, true);
    b.append(SqlInfo::SqlTransactionsSupported, false);
    b.append(SqlInfo::SqlBatchUpdatesSupported, false);
    b.append(SqlInfo::SqlSavepointsSupported, false);
    b.append(SqlInfo::SqlNamedParametersSupported, false);
    b.append(SqlInfo::SqlLocatorsUpdateCopy, false);
    b.append(SqlInfo::SqlStoredFunctionsUsingCallSyntaxSupported, false);
    // Fixed values of fixed types: building them cannot fail.
    b.build().expect("the door's SqlInfo values")
});

/// The answers to `GetSqlInfo`: the server's name and version, read-only, PostgreSQL's dialect.
pub fn sql_info() -> &'static SqlInfoData {
    &SQL_INFO
}

fn xdbc(
    name: &str,
    data_type: XdbcDataType,
    column_size: Option<i32>,
    quoted: bool,
    subcode: Option<XdbcDatetimeSubcode>,
) -> XdbcTypeInfo {
    let number = matches!(
        data_type,
        XdbcDataType::XdbcSmallint | XdbcDataType::XdbcInteger | XdbcDataType::XdbcBigint | XdbcDataType::XdbcDouble
    );
    XdbcTypeInfo {
        type_name: name.into(),
        data_type,
        column_size,
        literal_prefix: quoted.then(|| "'".into()),
        literal_suffix: quoted.then(|| "'".into()),
        create_params: None,
        nullable: Nullable::NullabilityNullable,
        case_sensitive: matches!(data_type, XdbcDataType::XdbcVarchar),
        searchable: Searchable::Full,
        unsigned_attribute: number.then_some(false),
        fixed_prec_scale: false,
        auto_increment: number.then_some(false),
        local_type_name: Some(name.into()),
        minimum_scale: None,
        maximum_scale: None,
        sql_data_type: if subcode.is_some() { XdbcDataType::XdbcDatetime } else { data_type },
        datetime_subcode: subcode,
        num_prec_radix: number.then_some(if matches!(data_type, XdbcDataType::XdbcDouble) { 2 } else { 10 }),
        interval_precision: None,
    }
}

static XDBC_TYPES: LazyLock<XdbcTypeInfoData> = LazyLock::new(|| {
    let mut b = XdbcTypeInfoDataBuilder::new();
    b.append(xdbc("boolean", XdbcDataType::XdbcBit, Some(1), false, None));
    b.append(xdbc("smallint", XdbcDataType::XdbcSmallint, Some(16), false, None));
    b.append(xdbc("integer", XdbcDataType::XdbcInteger, Some(32), false, None));
    b.append(xdbc("bigint", XdbcDataType::XdbcBigint, Some(64), false, None));
    b.append(xdbc("double precision", XdbcDataType::XdbcDouble, Some(53), false, None));
    b.append(xdbc("text", XdbcDataType::XdbcVarchar, None, true, None));
    // Subcode 1 is ODBC's SQL_CODE_DATE (the protocol names it after YEAR).
    b.append(xdbc("date", XdbcDataType::XdbcDate, Some(10), true, Some(XdbcDatetimeSubcode::XdbcSubcodeYear)));
    b.append(xdbc(
        "timestamp",
        XdbcDataType::XdbcTimestamp,
        Some(26),
        true,
        Some(XdbcDatetimeSubcode::XdbcSubcodeTimestamp),
    ));
    b.build().expect("the door's XDBC types")
});

/// The answers to `GetXdbcTypeInfo`: the types the answers' columns have.
pub fn xdbc_types() -> &'static XdbcTypeInfoData {
    &XDBC_TYPES
}
