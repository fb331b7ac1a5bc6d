import CDBus

/// Introspection XML for exported objects, as `org.freedesktop.DBus.Introspectable.Introspect` returns it.
enum Introspection {
    static func xml(object: ObjectRegistry.Object?, children: [String]) -> String {
        var lines = [
            #"<!DOCTYPE node PUBLIC "-//freedesktop//DTD D-BUS Object Introspection 1.0//EN""#,
            #" "http://www.freedesktop.org/standards/dbus/1.0/introspect.dtd">"#,
            "<node>",
            #"  <interface name="org.freedesktop.DBus.Introspectable"><method name="Introspect"><arg name="xml" type="s" direction="out"/></method></interface>"#,
        ]
        if let object {
            if object.interfaces.values.contains(where: { !$0.properties.isEmpty }) {
                lines.append(propertiesInterface)
            }
            if object.isObjectManager { lines.append(objectManagerInterface) }
            for interface in object.interfaces.values.sorted(by: { $0.name < $1.name }) {
                lines.append(contentsOf: describe(interface))
            }
        }
        lines += children.map { #"  <node name="\#($0)"/>"# }
        lines.append("</node>")
        return lines.joined(separator: "\n")
    }

    static func describe(_ interface: DBusInterface) -> [String] {
        var lines = [#"  <interface name="\#(interface.name)">"#]
        for (name, method) in interface.methods.sorted(by: { $0.key < $1.key }) {
            lines.append(#"    <method name="\#(name)">"#)
            lines += arguments(method.input, names: method.inputNames, direction: #" direction="in""#)
            lines += arguments(method.output, names: method.outputNames, direction: #" direction="out""#)
            lines.append("    </method>")
        }
        for (name, signature) in interface.signals.sorted(by: { $0.key < $1.key }) {
            lines.append(#"    <signal name="\#(name)">"#)
            lines += arguments(signature, names: interface.signalArgumentNames[name] ?? [], direction: "")
            lines.append("    </signal>")
        }
        for (name, property) in interface.properties.sorted(by: { $0.key < $1.key }) {
            let access = property.access == .readWrite ? "readwrite" : "read"
            lines.append(#"    <property name="\#(name)" type="\#(property.value.signatureString)" access="\#(access)"/>"#)
        }
        lines.append("  </interface>")
        return lines
    }

    /// One `<arg>` per complete type, named when names are given.
    private static func arguments(_ signature: DBusSignature, names: [String], direction: String) -> [String] {
        singleTypes(signature).enumerated().map { index, type in
            let name = index < names.count ? #" name="\#(names[index])""# : ""
            return #"      <arg\#(name) type="\#(type)"\#(direction)/>"#
        }
    }

    /// Splits a signature into its complete types with libdbus's signature iterator. The iterator keeps a pointer
    /// into the string, so the string stays alive for the whole walk (a temporary C string once dropped the last
    /// arguments of a method from the installed XML).
    static func singleTypes(_ signature: DBusSignature) -> [String] {
        guard !signature.rawValue.isEmpty else { return [] }
        return signature.rawValue.withCString { text in
            var iter = DBusSignatureIter()
            dbus_signature_iter_init(&iter, text)
            var types: [String] = []
            repeat {
                guard let raw = dbus_signature_iter_get_signature(&iter) else { break }
                types.append(String(cString: raw))
                dbus_free(raw)
            } while dbus_signature_iter_next(&iter) != 0
            return types
        }
    }

    private static let propertiesInterface = """
          <interface name="org.freedesktop.DBus.Properties">
            <method name="Get"><arg type="s" direction="in"/><arg type="s" direction="in"/><arg type="v" direction="out"/></method>
            <method name="GetAll"><arg type="s" direction="in"/><arg type="a{sv}" direction="out"/></method>
            <method name="Set"><arg type="s" direction="in"/><arg type="s" direction="in"/><arg type="v" direction="in"/></method>
            <signal name="PropertiesChanged"><arg type="s"/><arg type="a{sv}"/><arg type="as"/></signal>
          </interface>
        """

    private static let objectManagerInterface = """
          <interface name="org.freedesktop.DBus.ObjectManager">
            <method name="GetManagedObjects"><arg type="a{oa{sa{sv}}}" direction="out"/></method>
            <signal name="InterfacesAdded"><arg type="o"/><arg type="a{sa{sv}}"/></signal>
            <signal name="InterfacesRemoved"><arg type="o"/><arg type="as"/></signal>
          </interface>
        """
}
