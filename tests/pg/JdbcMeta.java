/*
 * make pg-test: pgjdbc's DatabaseMetaData, as DBeaver, Metabase and Tableau browse a database:
 * the tables and views of schema public (getTables) and the columns of `catalog` (getColumns).
 * Run against the PostgreSQL door and against a real PostgreSQL server holding the same table;
 * tests/pg/catalog.py compares the two.
 */
import java.sql.*;

public class JdbcMeta {
    public static void main(String[] args) throws Exception {
        try (Connection c = DriverManager.getConnection(args[0], args[1], args[2])) {
            DatabaseMetaData m = c.getMetaData();
            try (ResultSet r = m.getTables(null, "public", "%", new String[] {"TABLE", "VIEW"})) {
                while (r.next()) System.out.println("table " + r.getString("TABLE_NAME") + " " + r.getString("TABLE_TYPE"));
            }
            try (ResultSet r = m.getColumns(null, "public", "catalog", "%")) {
                while (r.next()) {
                    System.out.println("column " + r.getInt("ORDINAL_POSITION") + " " + r.getString("COLUMN_NAME") + " "
                        + r.getString("TYPE_NAME") + " " + r.getInt("DATA_TYPE") + " " + r.getString("IS_NULLABLE"));
                }
            }
            try (ResultSet r = m.getPrimaryKeys(null, "public", "catalog")) {
                int n = 0;
                while (r.next()) n++;
                System.out.println("primary keys " + n);
            }
            try (ResultSet r = m.getSchemas()) {
                while (r.next()) System.out.println("schema " + r.getString("TABLE_SCHEM"));
            }
        }
    }
}
