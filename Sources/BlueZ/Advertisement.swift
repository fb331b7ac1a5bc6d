import DBusKit

/// An LE advertisement (`org.bluez.LEAdvertisement1`), declared as data. Legacy advertising carries 31
/// bytes: flags (3) + one 128-bit service UUID (18) leave 10 for service data; `localName` goes in the
/// scan response.
public struct Advertisement: Sendable, Hashable {
    public enum Kind: String, Sendable { case peripheral, broadcast }

    public var kind: Kind
    public var serviceUUIDs: [String]
    public var serviceData: [String: [UInt8]]
    public var manufacturerData: [UInt16: [UInt8]]
    public var localName: String?
    /// General discoverable with BR/EDR not supported (flags 0x06): centrals then treat us as LE-only.
    public var discoverable: Bool
    public var includes: [String]

    public init(
        kind: Kind = .peripheral, serviceUUIDs: [String] = [], serviceData: [String: [UInt8]] = [:],
        manufacturerData: [UInt16: [UInt8]] = [:], localName: String? = nil, discoverable: Bool = true,
        includes: [String] = []
    ) {
        self.kind = kind
        self.serviceUUIDs = serviceUUIDs.map { $0.lowercased() }
        self.serviceData = serviceData
        self.manufacturerData = manufacturerData
        self.localName = localName
        self.discoverable = discoverable
        self.includes = includes
    }

    var properties: [String: DBusProperty] {
        var props: [String: DBusProperty] = [
            "Type": DBusProperty(.string(kind.rawValue)),
            "ServiceUUIDs": DBusProperty(.strings(serviceUUIDs)),
            "Discoverable": DBusProperty(.boolean(discoverable)),
            "Includes": DBusProperty(.strings(includes)),
            "ServiceData": DBusProperty(
                .dictionary(
                    key: "s", value: "v",
                    serviceData.sorted { $0.key < $1.key }.map {
                        DBusDictEntry(key: .string($0.key), value: .variant(.bytes($0.value)))
                    })),
            "ManufacturerData": DBusProperty(
                .dictionary(
                    key: "q", value: "v",
                    manufacturerData.sorted { $0.key < $1.key }.map {
                        DBusDictEntry(key: .uint16($0.key), value: .variant(.bytes($0.value)))
                    })),
        ]
        if let localName { props["LocalName"] = DBusProperty(.string(localName)) }
        return props
    }
}

extension Adapter {
    /// Starts advertising; the handle stops it. Advertising resumes by itself after bluetoothd restarts.
    public func advertise(_ advertisement: Advertisement) async throws(BlueZError) -> AdvertisementHandle {
        let path = ExportPaths.next("advertisement")
        let logger = session.logger
        let interface = DBusInterface(
            BlueZ.advertisementInterface,
            methods: [
                "Release": DBusMethod { _ in
                    logger.info("bluetoothd released the advertisement", metadata: ["path": "\(path)"])
                    return []
                }
            ],
            properties: advertisement.properties)
        let object = try await export(session, path, [interface])
        do {
            let registration = try await Registration(
                adapter: self, object: path, manager: BlueZ.advertisingManagerInterface, member: "Advertisement")
            return AdvertisementHandle(registration: registration, object: object)
        } catch {
            await object.unexport()
            throw error
        }
    }
}

/// A registered advertisement; `stop()` unregisters it.
public final class AdvertisementHandle: Sendable {
    private let registration: Registration
    private let object: DBusObjectHandle

    init(registration: Registration, object: DBusObjectHandle) {
        self.registration = registration
        self.object = object
    }

    public var path: DBusObjectPath { object.path }

    public func stop() async {
        await registration.cancel()
        await object.unexport()
    }
}
