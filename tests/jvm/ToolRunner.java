// Runs Apache Kafka's command-line tools (their main classes) one after another in one JVM, so a test can
// run dozens of them without paying a JVM start for each. Reads one JSON object a line from stdin:
// {"main": "org.apache.kafka.tools.TopicCommand", "args": [...], "stdin": "..."}; writes one a line:
// {"exit": N, "stdout": "...", "stderr": "..."}. A tool's Exit.exit() ends the tool, not the JVM: its code is
// the tool's exit code, and what the tool writes after it (a catch-all printing the exception that stopped
// it) is dropped, as it would never have been written by a JVM that had exited.
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedReader;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.io.PrintStream;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.apache.kafka.common.utils.internals.Exit;

public final class ToolRunner {
    /** Thrown in place of the JVM's exit, carrying the tool's exit code. */
    static final class ToolExit extends RuntimeException {
        final int code;

        ToolExit(int code) {
            super(null, null, false, false);
            this.code = code;
        }
    }

    public static void main(String[] argv) throws Exception {
        ObjectMapper json = new ObjectMapper();
        PrintStream realOut = System.out;
        PrintStream realErr = System.err;
        InputStream realIn = System.in;
        BufferedReader commands = new BufferedReader(new InputStreamReader(realIn, StandardCharsets.UTF_8));
        PrintStream nowhere = new PrintStream(OutputStream.nullOutputStream(), true, StandardCharsets.UTF_8);
        Integer[] exited = new Integer[1];
        Exit.Procedure exitProcedure = (code, message) -> {
            if (exited[0] == null) {
                exited[0] = code;
                System.out.flush();
                System.err.flush();
                System.setOut(nowhere);
                System.setErr(nowhere);
            }
            throw new ToolExit(code);
        };
        Exit.setExitProcedure(exitProcedure);
        Exit.setHaltProcedure(exitProcedure);
        String line;
        while ((line = commands.readLine()) != null) {
            JsonNode command = json.readTree(line);
            List<String> args = new ArrayList<>();
            command.path("args").forEach(a -> args.add(a.asText()));
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            ByteArrayOutputStream err = new ByteArrayOutputStream();
            int exit = 0;
            exited[0] = null;
            System.setOut(new PrintStream(out, true, StandardCharsets.UTF_8));
            System.setErr(new PrintStream(err, true, StandardCharsets.UTF_8));
            System.setIn(new ByteArrayInputStream(command.path("stdin").asText("").getBytes(StandardCharsets.UTF_8)));
            try {
                Method main = Class.forName(command.get("main").asText()).getMethod("main", String[].class);
                main.invoke(null, (Object) args.toArray(new String[0]));
            } catch (InvocationTargetException e) {
                Throwable cause = e.getCause();
                if (cause instanceof ToolExit) {
                    exit = ((ToolExit) cause).code;
                } else {
                    cause.printStackTrace(System.err);
                    exit = 1;
                }
            } catch (ToolExit e) {
                exit = e.code;
            } catch (Throwable e) {
                e.printStackTrace(System.err);
                exit = 1;
            } finally {
                System.out.flush();
                System.err.flush();
                System.setOut(realOut);
                System.setErr(realErr);
                System.setIn(realIn);
            }
            ObjectNode answer = json.createObjectNode();
            answer.put("exit", exited[0] != null ? exited[0] : exit);
            answer.put("stdout", out.toString(StandardCharsets.UTF_8));
            answer.put("stderr", err.toString(StandardCharsets.UTF_8));
            realOut.println(json.writeValueAsString(answer));
            realOut.flush();
        }
    }
}
