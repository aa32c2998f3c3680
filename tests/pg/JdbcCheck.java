/*
 * make pg-test: pgjdbc (Debian's libpostgresql-jdbc-java), the driver of DBeaver, Metabase and
 * most BI tools, against the PostgreSQL door: connect (it sets extra_float_digits and
 * application_name), a plain query, a prepared statement with an int and a text parameter.
 * Prints what it read; tests/pg/check.py compares it with DuckDB.
 */
import java.sql.*;

public class JdbcCheck {
    public static void main(String[] args) throws Exception {
        String url = args[0];
        try (Connection c = DriverManager.getConnection(url, args[1], args[2])) {
            System.out.println("product " + c.getMetaData().getDatabaseProductName() + " " + c.getMetaData().getDatabaseProductVersion());
            try (Statement s = c.createStatement(); ResultSet r = s.executeQuery("SELECT count(*) AS n FROM catalog WHERE ano >= 2020")) {
                r.next();
                System.out.println("count " + r.getLong("n"));
            }
            try (PreparedStatement p = c.prepareStatement("SELECT marca, count(*) AS n FROM catalog WHERE ano >= ? AND marca = ? GROUP BY marca")) {
                p.setInt(1, 2018);
                p.setString(2, "Fiat");
                try (ResultSet r = p.executeQuery()) {
                    while (r.next()) System.out.println("prepared " + r.getString(1) + " " + r.getLong(2));
                }
            }
        }
    }
}
