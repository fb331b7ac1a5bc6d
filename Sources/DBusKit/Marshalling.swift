import CDBus

/// Reading and writing `DBusValue`s through libdbus's message iterators.
enum Marshalling {
    /// Libdbus allows 32 levels of array and 32 of struct nesting; a deeper value is refused before marshalling.
    static let maxDepth = 64

    // MARK: Reading

    static func readAll(_ message: OpaquePointer) -> [DBusValue] {
        var iter = DBusMessageIter()
        guard dbus_message_iter_init(message, &iter) != 0 else { return [] }
        var values: [DBusValue] = []
        while dbus_message_iter_get_arg_type(&iter) != CDBUS_TYPE_INVALID {
            values.append(read(&iter))
            dbus_message_iter_next(&iter)
        }
        return values
    }

    /// Reads the value at `iter`. libdbus has validated the message, so every type here is well-formed.
    static func read(_ iter: inout DBusMessageIter) -> DBusValue {
        let type = dbus_message_iter_get_arg_type(&iter)
        switch type {
        case CDBUS_TYPE_BYTE: return .byte(basic(&iter, UInt8(0)))
        case CDBUS_TYPE_BOOLEAN: return .boolean(basic(&iter, dbus_bool_t(0)) != 0)
        case CDBUS_TYPE_INT16: return .int16(basic(&iter, Int16(0)))
        case CDBUS_TYPE_UINT16: return .uint16(basic(&iter, UInt16(0)))
        case CDBUS_TYPE_INT32: return .int32(basic(&iter, Int32(0)))
        case CDBUS_TYPE_UINT32: return .uint32(basic(&iter, UInt32(0)))
        case CDBUS_TYPE_INT64: return .int64(basic(&iter, Int64(0)))
        case CDBUS_TYPE_UINT64: return .uint64(basic(&iter, UInt64(0)))
        case CDBUS_TYPE_DOUBLE: return .double(basic(&iter, Double(0)))
        case CDBUS_TYPE_STRING: return .string(string(&iter))
        case CDBUS_TYPE_OBJECT_PATH: return .objectPath(DBusObjectPath(unchecked: string(&iter)))
        case CDBUS_TYPE_SIGNATURE: return .signature(DBusSignature(unchecked: string(&iter)))
        case CDBUS_TYPE_UNIX_FD: return .unixFD(DBusUnixFD(owning: basic(&iter, CInt(-1))))
        case CDBUS_TYPE_VARIANT:
            var sub = DBusMessageIter()
            dbus_message_iter_recurse(&iter, &sub)
            return .variant(read(&sub))
        case CDBUS_TYPE_STRUCT:
            var sub = DBusMessageIter()
            dbus_message_iter_recurse(&iter, &sub)
            return .structure(readElements(&sub))
        case CDBUS_TYPE_ARRAY:
            return readArray(&iter)
        default:
            preconditionFailure("libdbus returned unknown type \(type) in a validated message")
        }
    }

    private static func readArray(_ iter: inout DBusMessageIter) -> DBusValue {
        let elementType = dbus_message_iter_get_element_type(&iter)
        var sub = DBusMessageIter()
        dbus_message_iter_recurse(&iter, &sub)
        if elementType == CDBUS_TYPE_BYTE {
            var pointer: UnsafeMutableRawPointer?
            var count: CInt = 0
            dbus_message_iter_get_fixed_array(&sub, &pointer, &count)
            guard let pointer, count > 0 else { return .bytes([]) }
            return .bytes(Array(UnsafeRawBufferPointer(start: pointer, count: Int(count))))
        }
        let arraySignature = signature(of: &iter)
        let element = String(arraySignature.dropFirst())
        guard elementType == CDBUS_TYPE_DICT_ENTRY else {
            return .array(element: DBusSignature(unchecked: element), readElements(&sub))
        }
        // "{kv}": the key is always a single basic type code.
        let inner = element.dropFirst().dropLast()
        let key = String(inner.prefix(1))
        let value = String(inner.dropFirst())
        var entries: [DBusDictEntry] = []
        while dbus_message_iter_get_arg_type(&sub) != CDBUS_TYPE_INVALID {
            var entry = DBusMessageIter()
            dbus_message_iter_recurse(&sub, &entry)
            let k = read(&entry)
            dbus_message_iter_next(&entry)
            entries.append(DBusDictEntry(key: k, value: read(&entry)))
            dbus_message_iter_next(&sub)
        }
        return .dictionary(key: DBusSignature(unchecked: key), value: DBusSignature(unchecked: value), entries)
    }

    private static func readElements(_ sub: inout DBusMessageIter) -> [DBusValue] {
        var values: [DBusValue] = []
        while dbus_message_iter_get_arg_type(&sub) != CDBUS_TYPE_INVALID {
            values.append(read(&sub))
            dbus_message_iter_next(&sub)
        }
        return values
    }

    private static func basic<T>(_ iter: inout DBusMessageIter, _ initial: T) -> T {
        var value = initial
        withUnsafeMutablePointer(to: &value) { dbus_message_iter_get_basic(&iter, $0) }
        return value
    }

    private static func string(_ iter: inout DBusMessageIter) -> String {
        let pointer = basic(&iter, UnsafePointer<CChar>?.none)
        return pointer.map { String(cString: $0) } ?? ""
    }

    private static func signature(of iter: inout DBusMessageIter) -> String {
        guard let raw = dbus_message_iter_get_signature(&iter) else { return "" }
        defer { dbus_free(raw) }
        return String(cString: raw)
    }

    // MARK: Writing

    /// Checks everything libdbus would otherwise reject (or abort on) before anything is appended,
    /// so a bad value never leaves a half-written message.
    static func validate(_ value: DBusValue, depth: Int = 0) throws(DBusError) {
        guard depth < maxDepth else { throw DBusError(.invalidValue, "value nested deeper than \(maxDepth)") }
        switch value {
        case .string(let s):
            guard !s.utf8.contains(0) else { throw DBusError(.invalidValue, "string contains a NUL byte") }
        case .array(let element, let values):
            guard dbus_signature_validate_single(element.rawValue, nil) != 0 else {
                throw DBusError(.invalidValue, "array element signature '\(element)' is not one complete type")
            }
            for v in values {
                guard v.signatureString == element.rawValue else {
                    throw DBusError.typeMismatch(expected: element.rawValue, actual: v.signatureString, "array element")
                }
                try validate(v, depth: depth + 1)
            }
        case .dictionary(let key, let valueSignature, let entries):
            guard dbus_signature_validate_single("a{\(key.rawValue)\(valueSignature.rawValue)}", nil) != 0 else {
                throw DBusError(.invalidValue, "invalid dictionary signature a{\(key)\(valueSignature)}")
            }
            for entry in entries {
                guard entry.key.signatureString == key.rawValue, entry.value.signatureString == valueSignature.rawValue else {
                    throw DBusError.typeMismatch(
                        expected: "{\(key)\(valueSignature)}",
                        actual: "{\(entry.key.signatureString)\(entry.value.signatureString)}", "dictionary entry")
                }
                try validate(entry.key, depth: depth + 1)
                try validate(entry.value, depth: depth + 1)
            }
        case .structure(let fields):
            guard !fields.isEmpty else { throw DBusError(.invalidValue, "a struct needs at least one field") }
            for f in fields { try validate(f, depth: depth + 1) }
        case .variant(let inner):
            try validate(inner, depth: depth + 1)
        default:
            break
        }
    }

    static func append(_ values: [DBusValue], to message: OpaquePointer) throws(DBusError) {
        for v in values { try validate(v) }
        var iter = DBusMessageIter()
        dbus_message_iter_init_append(message, &iter)
        for v in values { append(v, to: &iter) }
    }

    /// Appends an already validated value. libdbus fails only when out of memory, which we treat as fatal.
    private static func append(_ value: DBusValue, to iter: inout DBusMessageIter) {
        switch value {
        case .byte(let v): appendBasic(&iter, CDBUS_TYPE_BYTE, v)
        case .boolean(let v): appendBasic(&iter, CDBUS_TYPE_BOOLEAN, dbus_bool_t(v ? 1 : 0))
        case .int16(let v): appendBasic(&iter, CDBUS_TYPE_INT16, v)
        case .uint16(let v): appendBasic(&iter, CDBUS_TYPE_UINT16, v)
        case .int32(let v): appendBasic(&iter, CDBUS_TYPE_INT32, v)
        case .uint32(let v): appendBasic(&iter, CDBUS_TYPE_UINT32, v)
        case .int64(let v): appendBasic(&iter, CDBUS_TYPE_INT64, v)
        case .uint64(let v): appendBasic(&iter, CDBUS_TYPE_UINT64, v)
        case .double(let v): appendBasic(&iter, CDBUS_TYPE_DOUBLE, v)
        case .string(let s): appendString(&iter, CDBUS_TYPE_STRING, s)
        case .objectPath(let p): appendString(&iter, CDBUS_TYPE_OBJECT_PATH, p.rawValue)
        case .signature(let g): appendString(&iter, CDBUS_TYPE_SIGNATURE, g.rawValue)
        case .unixFD(let fd): appendBasic(&iter, CDBUS_TYPE_UNIX_FD, fd.rawValue)  // libdbus dup()s it
        case .bytes(let bytes):
            container(&iter, CDBUS_TYPE_ARRAY, "y") { sub in
                bytes.withUnsafeBytes { buffer in
                    var base = buffer.baseAddress ?? UnsafeRawPointer(bitPattern: 1)!
                    check(dbus_message_iter_append_fixed_array(&sub, CDBUS_TYPE_BYTE, &base, CInt(buffer.count)))
                }
            }
        case .array(let element, let values):
            container(&iter, CDBUS_TYPE_ARRAY, element.rawValue) { sub in
                for v in values { append(v, to: &sub) }
            }
        case .dictionary(let key, let valueSignature, let entries):
            container(&iter, CDBUS_TYPE_ARRAY, "{\(key.rawValue)\(valueSignature.rawValue)}") { sub in
                for entry in entries {
                    container(&sub, CDBUS_TYPE_DICT_ENTRY, nil) { pair in
                        append(entry.key, to: &pair)
                        append(entry.value, to: &pair)
                    }
                }
            }
        case .structure(let fields):
            container(&iter, CDBUS_TYPE_STRUCT, nil) { sub in
                for f in fields { append(f, to: &sub) }
            }
        case .variant(let inner):
            container(&iter, CDBUS_TYPE_VARIANT, inner.signatureString) { sub in append(inner, to: &sub) }
        }
    }

    private static func appendBasic<T>(_ iter: inout DBusMessageIter, _ type: CInt, _ value: T) {
        var value = value
        check(withUnsafePointer(to: &value) { dbus_message_iter_append_basic(&iter, type, $0) })
    }

    private static func appendString(_ iter: inout DBusMessageIter, _ type: CInt, _ value: String) {
        value.withCString { cString in
            var pointer: UnsafePointer<CChar>? = cString
            check(dbus_message_iter_append_basic(&iter, type, &pointer))
        }
    }

    private static func container(
        _ iter: inout DBusMessageIter, _ type: CInt, _ signature: String?, _ body: (inout DBusMessageIter) -> Void
    ) {
        var sub = DBusMessageIter()
        if let signature {
            check(signature.withCString { dbus_message_iter_open_container(&iter, type, $0, &sub) })
        } else {
            check(dbus_message_iter_open_container(&iter, type, nil, &sub))
        }
        body(&sub)
        check(dbus_message_iter_close_container(&iter, &sub))
    }

    private static func check(_ result: dbus_bool_t) {
        precondition(result != 0, "libdbus is out of memory")
    }
}
