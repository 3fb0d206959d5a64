import java.io.PrintWriter;
import java.io.StringWriter;
import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Enumeration;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.jar.JarEntry;
import java.util.jar.JarFile;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.spi.ToolProvider;

import org.apache.thrift.TBase;
import org.apache.thrift.TEnum;
import org.apache.thrift.TFieldIdEnum;
import org.apache.thrift.TFieldRequirementType;
import org.apache.thrift.TUnion;
import org.apache.thrift.meta_data.EnumMetaData;
import org.apache.thrift.meta_data.FieldMetaData;
import org.apache.thrift.meta_data.FieldValueMetaData;
import org.apache.thrift.meta_data.ListMetaData;
import org.apache.thrift.meta_data.MapMetaData;
import org.apache.thrift.meta_data.SetMetaData;
import org.apache.thrift.meta_data.StructMetaData;
import org.apache.thrift.protocol.TType;

/**
 * Dumps, as JSON on stdout, the Thrift model that the Java code generator compiled into a jar.
 *
 * <p>Why: hms-proxy must speak exactly the wire dialect of Hive Metastore 2.3.10, and the jar
 * PySpark ships is the authority for it. Reading the generated classes (metaDataMap, _Fields,
 * TEnum, the service Iface and its _args/_result structs) gives us names, ids, types,
 * requiredness and defaults without copying Apache's IDL. thrift/extract_idl.py renders the
 * JSON back into .thrift files.
 *
 * <p>Usage: java -cp jars/*:. DumpThriftModel NAME=JAR:PACKAGE:SERVICE:CONSTANTS ...
 * (CONSTANTS may be empty). Everything needed must be on the classpath.
 */
public final class DumpThriftModel {
  private DumpThriftModel() {}

  public static void main(String[] args) throws Exception {
    Map<String, Object> out = new LinkedHashMap<>();
    for (String arg : args) {
      String[] nameAndSpec = arg.split("=", 2);
      String[] spec = nameAndSpec[1].split(":", -1);
      out.put(nameAndSpec[0], dumpPackage(spec[0], spec[1], spec[2], spec[3]));
    }
    StringBuilder sb = new StringBuilder();
    Json.write(sb, out);
    System.out.println(sb);
  }

  /** Dumps one Thrift "program": the top-level generated classes of one package in one jar. */
  static Map<String, Object> dumpPackage(String jar, String pkg, String service, String constants)
      throws Exception {
    List<Object> structs = new ArrayList<>();
    List<Object> enums = new ArrayList<>();
    Object consts = List.of();
    Object svc = null;
    loadJavap(jar, pkg, service);
    for (String className : topLevelClasses(jar, pkg)) {
      Class<?> cls = Class.forName(className, true, DumpThriftModel.class.getClassLoader());
      String simple = cls.getSimpleName();
      if (simple.equals(service)) {
        svc = dumpService(cls);
      } else if (simple.equals(constants)) {
        consts = dumpConstants(cls);
      } else if (cls.isEnum() && TEnum.class.isAssignableFrom(cls)) {
        enums.add(dumpEnum(cls));
      } else if (TBase.class.isAssignableFrom(cls)) {
        structs.add(dumpStruct(cls));
      }
    }
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("package", pkg);
    m.put("jar", jar.substring(jar.lastIndexOf('/') + 1));
    m.put("enums", enums);
    m.put("constants", consts);
    m.put("structs", structs);
    m.put("service", svc);
    return m;
  }

  /** Sorted names of the top-level classes of a package (nested classes belong to them). */
  static Set<String> topLevelClasses(String jar, String pkg) throws Exception {
    String prefix = pkg.replace('.', '/') + "/";
    Set<String> names = new TreeSet<>();
    try (JarFile jf = new JarFile(jar)) {
      for (Enumeration<JarEntry> e = jf.entries(); e.hasMoreElements(); ) {
        String n = e.nextElement().getName();
        if (n.startsWith(prefix) && n.endsWith(".class") && !n.contains("$")
            && n.indexOf('/', prefix.length()) < 0) {
          names.add(n.substring(0, n.length() - 6).replace('/', '.'));
        }
      }
    }
    return names;
  }

  static Map<String, Object> dumpEnum(Class<?> cls) {
    List<Object> values = new ArrayList<>();
    for (Object c : cls.getEnumConstants()) {
      values.add(obj("name", ((Enum<?>) c).name(), "value", ((TEnum) c).getValue()));
    }
    return obj("name", cls.getSimpleName(), "values", values);
  }

  /** Public static final fields, in class-file (= IDL) order. */
  static List<Object> dumpConstants(Class<?> cls) throws Exception {
    List<Object> out = new ArrayList<>();
    for (String name : memberOrder(cls, false)) {
      Field f = cls.getDeclaredField(name);
      int mod = f.getModifiers();
      if (!(Modifier.isPublic(mod) && Modifier.isStatic(mod) && Modifier.isFinal(mod))) {
        continue;
      }
      out.add(obj("name", name, "type", obj("kind", javaConstType(f.getType())),
          "value", value(f.get(null))));
    }
    return out;
  }

  static String javaConstType(Class<?> t) {
    if (t == String.class) return "string";
    if (t == int.class) return "i32";
    if (t == long.class) return "i64";
    if (t == short.class) return "i16";
    if (t == byte.class) return "i8";
    if (t == boolean.class) return "bool";
    if (t == double.class) return "double";
    throw new IllegalArgumentException("unsupported constant type " + t);
  }

  static Map<String, Object> dumpStruct(Class<?> cls) throws Exception {
    String kind = TUnion.class.isAssignableFrom(cls) ? "union"
        : Throwable.class.isAssignableFrom(cls) ? "exception" : "struct";
    return obj("name", cls.getSimpleName(), "kind", kind, "fields", fields(cls));
  }

  /**
   * Fields from the static metaDataMap (an EnumMap, so in _Fields = IDL order). A field has a
   * default when the no-arg constructor sets it: isSet() catches objects, but primitive defaults
   * do not set the isset bit, so the constructor's putfield instructions are read via javap.
   */
  @SuppressWarnings({"unchecked", "rawtypes"})
  static List<Object> fields(Class<?> cls) throws Exception {
    Map<? extends TFieldIdEnum, FieldMetaData> meta =
        FieldMetaData.getStructMetaDataMap((Class<? extends TBase>) cls);
    TBase instance = (TBase) cls.getDeclaredConstructor().newInstance();
    Set<String> assigned = constructorAssignments(cls);
    List<Object> out = new ArrayList<>();
    for (Map.Entry<? extends TFieldIdEnum, FieldMetaData> e : meta.entrySet()) {
      TFieldIdEnum id = e.getKey();
      FieldMetaData fm = e.getValue();
      Map<String, Object> t = type(fm.valueMetaData);
      if ("struct".equals(t.get("kind")) && !t.containsKey("name") && !t.containsKey("typedef")) {
        // Thrift 0.9.3 describes the exceptions of a _result struct by their TType alone
        // (Hive 3.1.3's jar); the Java field declares the class.
        t = named("struct", cls.getDeclaredField(fm.fieldName).getType());
      }
      Map<String, Object> f = obj("name", fm.fieldName, "id", (int) id.getThriftFieldId(),
          "req", requirement(fm.requirementType), "type", t);
      if (instance.isSet(id) || assigned.contains(fm.fieldName)) {
        f.put("default", value(instance.getFieldValue(id)));
      }
      out.add(f);
    }
    return out;
  }

  static String requirement(byte r) {
    switch (r) {
      case TFieldRequirementType.REQUIRED: return "required";
      case TFieldRequirementType.OPTIONAL: return "optional";
      default: return "default";
    }
  }

  static Map<String, Object> type(FieldValueMetaData m) {
    Map<String, Object> t;
    if (m instanceof StructMetaData) {
      t = named("struct", ((StructMetaData) m).structClass);
    } else if (m instanceof EnumMetaData) {
      t = named("enum", ((EnumMetaData) m).enumClass);
    } else if (m instanceof ListMetaData) {
      t = obj("kind", "list", "elem", type(((ListMetaData) m).elemMetaData));
    } else if (m instanceof SetMetaData) {
      t = obj("kind", "set", "elem", type(((SetMetaData) m).elemMetaData));
    } else if (m instanceof MapMetaData) {
      MapMetaData mm = (MapMetaData) m;
      t = obj("kind", "map", "key", type(mm.keyMetaData), "value", type(mm.valueMetaData));
    } else {
      t = obj("kind", baseType(m));
    }
    if (m.isTypedef()) {
      t.put("typedef", m.getTypedefName());
    }
    return t;
  }

  static Map<String, Object> named(String kind, Class<?> c) {
    return obj("kind", kind, "name", c.getSimpleName(), "package", c.getPackageName());
  }

  /** Base types; a typedef'd STRUCT/ENUM is how the generator marks a forward reference. */
  static String baseType(FieldValueMetaData m) {
    switch (m.type) {
      case TType.BOOL: return "bool";
      case TType.BYTE: return "i8";
      case TType.I16: return "i16";
      case TType.I32: return "i32";
      case TType.I64: return "i64";
      case TType.DOUBLE: return "double";
      case TType.STRING: return m.isBinary() ? "binary" : "string";
      case TType.STRUCT: return "struct";
      case TType.ENUM: return "enum";
      default: throw new IllegalArgumentException("unsupported ttype " + m.type);
    }
  }

  /** The service: Iface methods in declaration order, each with its _args and _result. */
  static Map<String, Object> dumpService(Class<?> svc) throws Exception {
    Class<?> iface = Class.forName(svc.getName() + "$Iface");
    String parent = null;
    for (Class<?> i : iface.getInterfaces()) {
      if (i.getSimpleName().equals("Iface")) parent = i.getEnclosingClass().getSimpleName();
    }
    Set<String> seen = new LinkedHashSet<>(memberOrder(iface, true));
    List<Object> methods = new ArrayList<>();
    for (String name : seen) {
      methods.add(dumpMethod(svc, name));
    }
    return obj("name", svc.getSimpleName(), "extends", parent, "methods", methods);
  }

  static Map<String, Object> dumpMethod(Class<?> svc, String name) throws Exception {
    Class<?> argsCls = Class.forName(svc.getName() + "$" + name + "_args");
    Class<?> resultCls;
    try {
      resultCls = Class.forName(svc.getName() + "$" + name + "_result");
    } catch (ClassNotFoundException e) {
      resultCls = null; // the generator emits no _result for oneway methods
    }
    Map<String, Object> m = obj("name", name, "oneway", resultCls == null,
        "args", fields(argsCls), "returns", null);
    List<Object> exceptions = new ArrayList<>();
    if (resultCls != null) {
      for (Object o : fields(resultCls)) {
        @SuppressWarnings("unchecked")
        Map<String, Object> f = (Map<String, Object>) o;
        if (f.get("name").equals("success") && f.get("id").equals(0)) {
          m.put("returns", f.get("type"));
        } else {
          exceptions.add(f);
        }
      }
    }
    m.put("throws", exceptions);
    return m;
  }

  /** Names of methods (or fields) in class-file order, read with javap (reflection is unordered). */
  static List<String> memberOrder(Class<?> cls, boolean methods) {
    Pattern p = methods ? Pattern.compile("\\s([A-Za-z_]\\w*)\\(") : Pattern.compile("\\s([A-Za-z_]\\w*);$");
    List<String> names = new ArrayList<>();
    for (String line : javap(cls).split("\n")) {
      if (!line.startsWith("  ") || line.startsWith("   ")) continue; // member lines only
      Matcher mt = p.matcher(line);
      boolean isMethod = line.contains("(");
      if (isMethod == methods && mt.find() && !names.contains(mt.group(1))) {
        names.add(mt.group(1));
      }
    }
    return names;
  }

  /** Fields assigned by the no-arg constructor (its putfield instructions). */
  static Set<String> constructorAssignments(Class<?> cls) {
    Set<String> names = new TreeSet<>();
    boolean inCtor = false;
    Pattern put = Pattern.compile("putfield\\s.*// Field (\\w+):");
    for (String line : javap(cls).split("\n")) {
      if (line.startsWith("  ") && !line.startsWith("   ")) {
        inCtor = line.trim().equals("public " + cls.getName() + "();");
      } else if (inCtor) {
        Matcher m = put.matcher(line);
        if (m.find()) names.add(m.group(1));
      }
    }
    return names;
  }

  private static final Map<String, String> JAVAP = new LinkedHashMap<>();

  /** Disassembly of a class, from one batched javap run per jar (one run per class is slow). */
  static String javap(Class<?> cls) {
    String text = JAVAP.get(cls.getName());
    if (text == null) throw new IllegalStateException("no javap output for " + cls.getName());
    return text;
  }

  /** Runs javap -p -c once over the generated classes of a package and splits it per class. */
  static void loadJavap(String jar, String pkg, String service) throws Exception {
    String prefix = pkg.replace('.', '/') + "/";
    Pattern wanted = Pattern.compile(Pattern.quote(prefix)
        + "(\\w+|" + Pattern.quote(service) + "\\$(Iface|\\w+_args|\\w+_result))\\.class");
    List<String> args = new ArrayList<>(List.of("-p", "-c", "-cp", jar));
    try (JarFile jf = new JarFile(jar)) {
      for (Enumeration<JarEntry> e = jf.entries(); e.hasMoreElements(); ) {
        String n = e.nextElement().getName();
        if (wanted.matcher(n).matches()) {
          args.add(n.substring(0, n.length() - 6).replace('/', '.'));
        }
      }
    }
    ToolProvider tool = ToolProvider.findFirst("javap").orElseThrow();
    StringWriter out = new StringWriter();
    int rc = tool.run(new PrintWriter(out), new PrintWriter(System.err), args.toArray(new String[0]));
    if (rc != 0) throw new IllegalStateException("javap failed on " + jar);
    Pattern header = Pattern.compile("^(?:\\w+ )*(?:class|interface|enum) ([\\w.$]+)");
    String current = null;
    StringBuilder sb = new StringBuilder();
    for (String line : out.toString().split("\n")) {
      Matcher m = header.matcher(line);
      if (m.find()) {
        if (current != null) JAVAP.put(current, sb.toString());
        current = m.group(1);
        sb.setLength(0);
      }
      sb.append(line).append('\n');
    }
    if (current != null) JAVAP.put(current, sb.toString());
  }

  /** Converts a default value to JSON-able data; enums keep their type so the IDL can name them. */
  static Object value(Object v) {
    if (v == null || v instanceof String || v instanceof Number || v instanceof Boolean) return v;
    if (v instanceof TEnum) {
      return obj("enum", v.getClass().getSimpleName(), "name", ((Enum<?>) v).name(),
          "value", ((TEnum) v).getValue());
    }
    if (v instanceof Collection) {
      List<Object> l = new ArrayList<>();
      for (Object o : (Collection<?>) v) l.add(value(o));
      return obj("list", l);
    }
    if (v instanceof Map) {
      List<Object> l = new ArrayList<>();
      for (Map.Entry<?, ?> e : ((Map<?, ?>) v).entrySet()) {
        l.add(List.of(value(e.getKey()), value(e.getValue())));
      }
      return obj("map", l);
    }
    throw new IllegalArgumentException("unsupported default value " + v.getClass());
  }

  static Map<String, Object> obj(Object... kv) {
    Map<String, Object> m = new LinkedHashMap<>();
    for (int i = 0; i < kv.length; i += 2) m.put((String) kv[i], kv[i + 1]);
    return m;
  }

  /** Minimal JSON writer, so the dumper needs nothing beyond libthrift. */
  static final class Json {
    static void write(StringBuilder sb, Object v) {
      if (v == null) {
        sb.append("null");
      } else if (v instanceof String) {
        sb.append('"');
        for (char c : ((String) v).toCharArray()) {
          if (c == '"' || c == '\\') sb.append('\\').append(c);
          else if (c < 0x20) sb.append(String.format("\\u%04x", (int) c));
          else sb.append(c);
        }
        sb.append('"');
      } else if (v instanceof Map) {
        sb.append('{');
        String sep = "";
        for (Map.Entry<?, ?> e : ((Map<?, ?>) v).entrySet()) {
          sb.append(sep);
          write(sb, e.getKey().toString());
          sb.append(':');
          write(sb, e.getValue());
          sep = ",";
        }
        sb.append('}');
      } else if (v instanceof List) {
        sb.append('[');
        String sep = "";
        for (Object o : (List<?>) v) {
          sb.append(sep);
          write(sb, o);
          sep = ",";
        }
        sb.append(']');
      } else {
        sb.append(v);
      }
    }
  }
}
