import BlueZ

/// How many times a device is discovered afresh, and how many connection attempts each time.
private let rounds = 3
private let attemptsPerRound = 3

/// Discovers a peripheral that `filter` lets through and `accepts` takes, and connects. A device whose connection
/// keeps failing (a link that comes up and breaks during ATT setup) is forgotten and discovered afresh, as an app
/// would, up to 3 times. `attempts` counts every connection attempt of every round; `timeout` (seconds) bounds each
/// discovery.
func connect(
    _ adapter: Adapter, _ filter: DiscoveryFilter, accepting accepts: @escaping @Sendable (Device) -> Bool = { _ in true },
    timeout: Int
) async throws -> (Device, Device.ConnectReport, discovered: ContinuousClock.Instant, attempts: Int) {
    var failedAttempts = 0
    for round in 1...rounds {
        let devices = adapter.discoveredDevices(matching: filter)
        try await adapter.startDiscovery()
        print("central: discovering on \(adapter.name) \(adapter.address ?? "?")")
        let device = try await firstDevice(devices, accepting: accepts, timeout: timeout)
        let discovered = ContinuousClock.now
        print("central: found \(device.address ?? "?")")
        do {
            let report = try await device.connect(attempts: attemptsPerRound)
            return (device, report, discovered, failedAttempts + report.attempts)
        } catch {
            guard round < rounds else { throw error }
            failedAttempts += attemptsPerRound
            print("central: connecting failed (\(error)); forgetting the device and discovering again")
            try? await adapter.removeDevice(device)
        }
    }
    throw LoopbackFailure("no connection after \(rounds) rounds")
}

private func firstDevice(
    _ devices: AsyncStream<Device>, accepting accepts: @escaping @Sendable (Device) -> Bool, timeout: Int
) async throws -> Device {
    try await withThrowingTaskGroup(of: Device?.self) { group in
        group.addTask { await devices.first(where: accepts) }
        group.addTask {
            try await Task.sleep(for: .seconds(timeout))
            return nil
        }
        let first = try await group.next() ?? nil
        group.cancelAll()
        guard let first else { throw LoopbackFailure("no peripheral with the service within \(timeout) s") }
        return first
    }
}
