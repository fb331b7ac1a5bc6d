import BlepayControl
import Foundation
import Testing

/// `docs/control-api.md` against the interfaces the daemons serve (their introspection XML, as installed): every
/// method documented, none that is not served, and each documented signature the served one.
@Suite struct ControlDocumentationTests {
    static let document = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../../docs/control-api.md").standardized

    /// Each method of the XML with its in and out signatures.
    static func served(_ role: DaemonRole) -> [String: (input: String, output: String)] {
        var methods: [String: (input: String, output: String)] = [:]
        var current: String?
        for line in ControlAPI.introspectionXML(role).split(separator: "\n") {
            if let name = line.firstMatch(of: /<method name="([A-Za-z]+)">/)?.1 {
                current = String(name)
                methods[String(name)] = ("", "")
            } else if let current, let arg = line.firstMatch(of: /<arg name="[a-z_]+" type="([^"]+)" direction="(in|out)"\/>/) {
                if arg.2 == "in" { methods[current]!.input += arg.1 } else { methods[current]!.output += arg.1 }
            } else if line.contains("</method>") {
                current = nil
            }
        }
        return methods
    }

    /// The rows of the method table under `heading`: the method names of each row, and its In and Out cells' types.
    static func documented(under heading: String) throws -> [(names: [String], input: String, output: String)] {
        let text = try String(contentsOf: document, encoding: .utf8)
        let section = try #require(text.components(separatedBy: "\n## ").first { $0.hasPrefix(heading) })
        return section.split(separator: "\n").filter { $0.hasPrefix("| `") }.map { row in
            let cells = row.split(separator: "|", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
            // What is in backticks and spelled as D-Bus types: not a format such as `YYYY-MM-DD`.
            func types(_ cell: String) -> String { cell.matches(of: /`([ybnqiuxtdsogvah(){}]+)`/).map { String($0.1) }.joined() }
            return (cells[1].matches(of: /`([A-Za-z]+)`/).map { String($0.1) }, types(cells[2]), types(cells[3]))
        }
    }

    @Test(arguments: [(DaemonRole.customer, "Customer: `org.blepay.Customer1`"), (.business, "Business: `org.blepay.Business1`")])
    func theDocumentedMethodsAreTheServedOnes(role: DaemonRole, heading: String) throws {
        let served = Self.served(role)
        let rows = try Self.documented(under: heading)
        #expect(Set(rows.flatMap(\.names)) == Set(served.keys))
        for row in rows where row.names.count == 1 {
            let name = row.names[0]
            #expect(served[name]?.input == row.input, "\(name) in: documented \(row.input)")
            #expect(served[name]?.output == row.output, "\(name) out: documented \(row.output)")
        }
    }

    /// The XML names every argument of every method, the last of several out arguments too.
    @Test func theInstalledXMLNamesEveryArgument() {
        let report = Self.served(.business)["DailyReport"]
        #expect(report?.output == "sssa(suttutx)")
        #expect(Self.served(.business)["GetPayment"]?.output == "(ssa{sv})a(ssa{sv})a(ssa{sv})")
    }
}
