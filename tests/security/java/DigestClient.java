/*
 * A delegation token used as Hive's own metastore client uses it (HadoopThriftAuthBridge's
 * DIGEST-MD5 client, what a Spark executor without a ticket runs): libthrift's
 * TSaslClientTransport with the JDK's DIGEST-MD5, no protocol, server name "default", the
 * token's identifier and password base64-encoded as username and password, realm "default",
 * and the quality of protection asked for (javax.security.sasl.qop: auth, auth-int,
 * auth-conf, as hadoop.rpc.protection's authentication, integrity, privacy).
 *
 *   java -cp CLASSES:JARS DigestClient HOST PORT TOKEN QOP [CALLS]
 *
 * TOKEN is Hadoop's URL-safe token string (Token.encodeToUrlString). Makes CALLS (default 1)
 * get_all_databases calls and a get_table of a missing table (an answer of some size both
 * ways), then prints one JSON line: {"ok":true,"qop":"...","databases":[...],"missing":"..."}
 * or {"ok":false,"error":"..."}.
 */
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import javax.security.auth.callback.Callback;
import javax.security.auth.callback.CallbackHandler;
import javax.security.auth.callback.NameCallback;
import javax.security.auth.callback.PasswordCallback;
import javax.security.sasl.RealmCallback;
import javax.security.sasl.Sasl;

import org.apache.hadoop.hive.metastore.api.NoSuchObjectException;
import org.apache.hadoop.hive.metastore.api.ThriftHiveMetastore;
import org.apache.hadoop.security.token.Token;
import org.apache.hadoop.security.token.TokenIdentifier;
import org.apache.thrift.protocol.TBinaryProtocol;
import org.apache.thrift.transport.TSaslClientTransport;
import org.apache.thrift.transport.TSocket;

public final class DigestClient {
    public static void main(String[] args) {
        String reply;
        try {
            reply = run(args[0], Integer.parseInt(args[1]), args[2], args[3],
                        args.length > 4 ? Integer.parseInt(args[4]) : 1);
        } catch (Throwable e) {
            Throwable root = e;
            while (root.getCause() != null) root = root.getCause();
            reply = "{\"ok\":false,\"error\":" + json(e.getClass().getSimpleName() + ": "
                    + e.getMessage() + " / " + root.getMessage()) + "}";
        }
        System.out.println(reply);
    }

    static String run(String host, int port, String tokenText, String qop, int calls) throws Exception {
        Token<TokenIdentifier> token = new Token<>();
        token.decodeFromUrlString(tokenText);
        final String user = Base64.getEncoder().encodeToString(token.getIdentifier());
        final char[] password = Base64.getEncoder().encodeToString(token.getPassword()).toCharArray();
        CallbackHandler handler = callbacks -> {
            for (Callback cb : callbacks) {
                if (cb instanceof NameCallback) ((NameCallback) cb).setName(user);
                else if (cb instanceof PasswordCallback) ((PasswordCallback) cb).setPassword(password);
                else if (cb instanceof RealmCallback) {
                    RealmCallback rc = (RealmCallback) cb;
                    rc.setText(rc.getDefaultText());
                }
            }
        };
        Map<String, String> props = new HashMap<>();
        props.put(Sasl.QOP, qop);
        props.put(Sasl.SERVER_AUTH, "true");
        TSocket socket = new TSocket(host, port, 60_000);
        TSaslClientTransport transport = new TSaslClientTransport(
            "DIGEST-MD5", null, null, "default", props, handler, socket);
        transport.open();
        try {
            ThriftHiveMetastore.Client client = new ThriftHiveMetastore.Client(new TBinaryProtocol(transport));
            List<String> dbs = null;
            for (int i = 0; i < calls; i++) dbs = client.get_all_databases();
            String missing;
            try {
                client.get_table("default", "no_such_table_" + "x".repeat(2000));
                missing = "found";
            } catch (NoSuchObjectException e) {
                missing = e.getClass().getSimpleName();
            }
            StringBuilder sb = new StringBuilder("{\"ok\":true,\"qop\":")
                .append(json(String.valueOf(transport.getSaslClient().getNegotiatedProperty(Sasl.QOP))))
                .append(",\"databases\":[");
            for (int i = 0; i < dbs.size(); i++) sb.append(i > 0 ? "," : "").append(json(dbs.get(i)));
            return sb.append("],\"missing\":").append(json(missing)).append("}").toString();
        } finally {
            transport.close();
        }
    }

    static String json(String s) {
        StringBuilder sb = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            if (c == '"' || c == '\\') sb.append('\\').append(c);
            else if (c < 0x20) sb.append(String.format("\\u%04x", (int) c));
            else sb.append(c);
        }
        return sb.append('"').toString();
    }
}
