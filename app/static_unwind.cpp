// Linked into the static meshrun only (app/CMakeLists.txt, MESHRUN_STATIC), with
//   -Wl,--eh-frame-hdr -Wl,--wrap=__register_frame_info -Wl,--wrap=__deregister_frame_info
//
// In a -static link GCC starts the program with crtbeginT.o, which hands the binary's whole
// .eh_frame to libgcc's unwinder (__register_frame_info), and does not ask the linker for an
// .eh_frame_hdr. The first exception thrown then makes libgcc count and sort all of the binary's
// ~8500 FDEs before it can unwind one frame: about 1.4 ms, paid by every run that ends in an
// error (exit codes 1-6), --help and --version. A failing `meshrun dp-step` took 2.2 ms, a
// passing one 1.1 ms.
//
// These two functions stand in for the registration, so that nothing is registered; libgcc then
// finds an FDE as it does in every dynamically linked program: glibc's _dl_find_object (set up
// for a static executable in _dl_non_dynamic_init, before any constructor runs, so a throw during
// static initialisation is covered too) hands it the PT_GNU_EH_FRAME segment, whose table the
// linker sorted at build time (--eh-frame-hdr), and libgcc searches it by bisection.
// crtbeginT's destructor deregisters at exit; libgcc's own __deregister_frame_info would abort on
// an object it never registered. The test static_meshrun_unwinds_through_eh_frame_hdr checks the
// segment and the wrapping in the built binary.
// The names are the ones `ld --wrap` gives, reserved identifiers by necessity.
// NOLINTBEGIN(bugprone-reserved-identifier)
extern "C" {
void __wrap___register_frame_info(const void* /*begin*/, void* /*object*/) {}
void* __wrap___deregister_frame_info(const void* /*begin*/) { return nullptr; }
}
// NOLINTEND(bugprone-reserved-identifier)
