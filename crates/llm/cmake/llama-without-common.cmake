# Included by CMake right after llama.cpp's `project("llama.cpp")` call (the variable
# CMAKE_PROJECT_llama.cpp_INCLUDE, set in the workspace's .cargo/config.toml and handed to CMake
# by llama-cpp-sys-2's build script, which passes every CMAKE_* variable of its environment).
#
# llama-cpp-2 depends on llama-cpp-sys-2 with its default features, so the `common` feature is
# always on and llama.cpp's common library (argument parsing, chat templates, Jinja, downloads)
# and cpp-httplib are compiled: more than half of the objects of the build. citeflow-llm asks
# llama-cpp-2 for no `common` (default-features = false), so nothing of it is called and the
# linker would drop it all. This normal variable shadows the cache entry the build script sets,
# so neither directory is added; the build script then finds no common library and links none.
set(LLAMA_BUILD_COMMON OFF)
