// See ../../README.md: declarations ProcessGroupGloo.hpp needs; nothing from this header is used.
#pragma once
