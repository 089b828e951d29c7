// See ../../README.md: Gloo transport types, held by ProcessGroupGloo behind smart pointers.
#pragma once
namespace gloo::transport {
class Device;
class UnboundBuffer;
}  // namespace gloo::transport
