"""Pure maze math: layouts, kinematics, collisions, ray casting, textures (hand-computed cases)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from wanderlust.envs.maze import physics
from wanderlust.envs.maze.layout import (
    MazeLayout,
    check_size,
    dfs_tour,
    farthest_cell,
    generate_layout,
    path_distances,
    region_map,
)
from wanderlust.envs.maze.raycast import (
    Camera,
    build_palette,
    cast_rays,
    draw_pillar,
    ray_directions,
    shade_walls,
)
from wanderlust.envs.maze.textures import (
    GOAL_RGB,
    fog_factor,
    hue_stride,
    region_colors,
    wall_table,
)


def l_layout() -> MazeLayout:
    """2x2 maze: (0,0)-(0,1), (0,0)-(1,0), (1,0)-(1,1) open; (0,1)-(1,1) walled."""
    return MazeLayout(
        size=2,
        open_east=np.array([[True], [True]]),
        open_south=np.array([[True, False]]),
    )


def closed_east_layout() -> MazeLayout:
    """2x2 maze where (0,0) is walled off from (0,1) but opens south."""
    return MazeLayout(
        size=2,
        open_east=np.array([[False], [True]]),
        open_south=np.array([[True, True]]),
    )


# ---- layout ---------------------------------------------------------------------------
@pytest.mark.parametrize("bad", [1, 0, 65, 2.5, True, "9"])
def test_check_size_rejects_out_of_range(bad):
    with pytest.raises(ValueError, match=r"\[2, 64\]"):
        check_size(bad)


def test_layout_shape_check():
    with pytest.raises(ValueError, match="open_east"):
        MazeLayout(size=3, open_east=np.zeros((3, 3), bool), open_south=np.zeros((2, 3), bool))


@pytest.mark.parametrize("size", [2, 5, 9, 20])
def test_generated_maze_is_perfect(size):
    layout = generate_layout(size, np.random.default_rng(size))
    # A spanning tree of S*S cells has exactly S*S - 1 passages and reaches every cell.
    assert layout.open_east.sum() + layout.open_south.sum() == size * size - 1
    assert (path_distances(layout, (0, 0)) >= 0).all()


def test_generation_is_deterministic_in_the_rng():
    a = generate_layout(9, np.random.default_rng(7))
    b = generate_layout(9, np.random.default_rng(7))
    c = generate_layout(9, np.random.default_rng(8))
    assert np.array_equal(a.open_east, b.open_east) and np.array_equal(a.open_south, b.open_south)
    assert not (np.array_equal(a.open_east, c.open_east) and np.array_equal(a.open_south, c.open_south))


def test_passages_and_walls_of_a_hand_layout():
    layout = l_layout()
    assert layout.has_passage((0, 0), (0, 1)) and layout.has_passage((0, 1), (0, 0))
    assert not layout.has_passage((0, 1), (1, 1))
    assert not layout.has_passage((0, 0), (1, 1))  # diagonal
    assert not layout.has_passage((0, 0), (0, -1))  # off the grid
    assert layout.neighbors((0, 0)) == [(0, 1), (1, 0)]
    expected_vertical = np.array([[True, False, True], [True, False, True]])
    expected_horizontal = np.array([[True, True], [False, True], [True, True]])
    assert np.array_equal(layout.vertical_walls, expected_vertical)
    assert np.array_equal(layout.horizontal_walls, expected_horizontal)
    # cell_walls order E, W, S, N
    assert layout.cell_walls[0, 1].tolist() == [True, False, True, True]
    assert layout.cell_walls[1, 0].tolist() == [False, True, True, False]


def test_path_distances_farthest_and_tour_by_hand():
    layout = l_layout()
    assert path_distances(layout, (0, 0)).tolist() == [[0, 1], [1, 2]]
    assert farthest_cell(layout, (0, 0)) == (1, 1)
    assert farthest_cell(layout, (1, 1)) == (0, 1)
    assert dfs_tour(layout, (0, 0)) == [(0, 0), (0, 1), (0, 0), (1, 0), (1, 1)]


def test_dfs_tour_covers_every_cell_through_passages():
    layout = generate_layout(9, np.random.default_rng(3))
    tour = dfs_tour(layout, (4, 4))
    assert tour[0] == (4, 4)
    assert len(set(tour)) == 81
    assert len(tour) <= 2 * 80 + 1
    assert all(layout.has_passage(a, b) for a, b in zip(tour, tour[1:]))


def test_region_map_blocks():
    regions = region_map(9, 3)
    assert regions[0, 0] == 0 and regions[2, 3] == 1 and regions[4, 4] == 4 and regions[8, 8] == 8
    assert set(np.unique(region_map(2, 3))) == {0, 1, 2, 3}


# ---- kinematics and collisions ------------------------------------------------------
def test_wrap_angle():
    assert physics.wrap_angle(0.0) == 0.0
    assert physics.wrap_angle(3 * math.pi / 2) == pytest.approx(-math.pi / 2)
    assert physics.wrap_angle(-3 * math.pi / 2) == pytest.approx(math.pi / 2)


def test_kinematics_by_hand():
    h, p, dx, dy = physics.kinematics(0.0, 0.0, np.array([0, 0, 0, 1.0]))
    assert (h, p, dx, dy) == pytest.approx((0.0, 0.0, 0.2, 0.0))
    _, _, dx, dy = physics.kinematics(math.pi / 2, 0.0, np.array([0, 0, 0, 1.0]))
    assert (dx, dy) == pytest.approx((0.0, 0.2))
    _, _, dx, dy = physics.kinematics(0.0, 0.0, np.array([0, 0, 1.0, 0]))  # strafe right = +y
    assert (dx, dy) == pytest.approx((0.0, 0.2))
    h, _, _, _ = physics.kinematics(0.0, 0.0, np.array([1.0, 0, 0, 0]))
    assert h == pytest.approx(math.pi / 20)
    _, p, _, _ = physics.kinematics(0.0, 0.48, np.array([0, 1.0, 0, 0]))
    assert p == pytest.approx(physics.MAX_PITCH)
    _, _, dx, dy = physics.kinematics(0.0, 0.0, np.array([0, 0, 1.0, 1.0]))  # capped diagonal
    assert math.hypot(dx, dy) == pytest.approx(0.2)


def test_speed_targets():
    assert 4 <= 1.0 / physics.MOVE_SPEED <= 6
    assert 8 <= (math.pi / 2) / physics.TURN_SPEED <= 12


def test_square_hits_wall():
    layout = l_layout()
    v, h = layout.vertical_walls, layout.horizontal_walls
    assert not physics.square_hits_wall(0.5, 0.5, 0.15, v, h)
    assert physics.square_hits_wall(0.1, 0.5, 0.15, v, h)  # outer border x = 0
    assert physics.square_hits_wall(-0.5, 0.5, 0.15, v, h)  # outside the world
    assert physics.square_hits_wall(0.5, 2.5, 0.15, v, h)
    assert not physics.square_hits_wall(1.0, 0.5, 0.15, v, h)  # straddles the open x = 1 line
    assert physics.square_hits_wall(1.5, 0.9, 0.15, v, h)  # wall y = 1 under cell (0, 1)
    assert not physics.square_hits_wall(0.5, 1.0, 0.15, v, h)  # open y = 1 under cell (0, 0)
    # Straddling the open y = 1 line in column 0 and reaching x = 1: the end of the wall
    # y = 1, x in [1, 2] is touched.
    assert physics.square_hits_wall(0.9, 1.0, 0.15, v, h)


def test_move_stops_at_wall_and_slides():
    layout = l_layout()
    v, h = layout.vertical_walls, layout.horizontal_walls
    x, y = physics.move_with_collisions(1.5, 0.5, 0.0, 0.2, v, h)  # free
    assert (x, y) == pytest.approx((1.5, 0.7))
    x, y = physics.move_with_collisions(1.5, 0.7, 0.0, 0.2, v, h)  # into wall y = 1
    assert y == pytest.approx(1.0 - 0.15, abs=1e-5) and y < 0.85
    # Diagonal into the wall: the y part is stopped, the x part slides.
    x, y = physics.move_with_collisions(1.5, 0.8, -0.1, 0.1, v, h)
    assert x == pytest.approx(1.4) and y == pytest.approx(0.85, abs=1e-5)
    assert not physics.square_hits_wall(x, y, 0.15, v, h)


def test_move_blocked_by_wall_end():
    layout = l_layout()
    v, h = layout.vertical_walls, layout.horizontal_walls
    # Straddling the open y = 1 line in column 0, walking east hits the end of wall y = 1.
    x, y = physics.move_with_collisions(0.8, 1.0, 0.2, 0.0, v, h)
    assert x == pytest.approx(1.0 - 0.15, abs=1e-5) and y == 1.0


# ---- ray casting ----------------------------------------------------------------------
def small_camera(fov_degrees: float = 66.0) -> Camera:
    return Camera(64, 64, math.radians(fov_degrees), physics.MAX_PITCH)


def test_camera_geometry():
    camera = small_camera(90.0)
    assert camera.focal == pytest.approx(32.0)
    assert camera.camera_x[0] == pytest.approx(-63 / 64) and camera.camera_x[-1] == pytest.approx(63 / 64)
    assert camera.horizon_shift(0.0) == 0
    assert camera.horizon_shift(0.2) == round(32 * math.tan(0.2))
    assert camera.horizon_shift(-10.0) == -camera.max_shift


def test_ray_directions_span_the_fov():
    camera = small_camera(90.0)
    ray_x, ray_y = ray_directions(camera, 0.0)
    assert np.allclose(ray_x, 1.0)
    assert np.allclose(ray_y, camera.camera_x)  # right of heading 0 is +y


def test_cast_rays_flat_wall_has_no_fisheye():
    layout = closed_east_layout()
    camera = small_camera()
    hits = cast_rays(layout.cell_walls, 0.5, 0.5, *ray_directions(camera, 0.0))
    # Every ray meets the wall x = 1 of cell (0, 0), perpendicular depth 0.5.
    assert np.allclose(hits.distance, 0.5)
    assert not hits.horizontal.any()
    assert (hits.cell == 0).all()
    middle = camera.width // 2
    assert hits.texture_u[middle] == pytest.approx(0.5, abs=0.02)
    assert np.all(np.diff(hits.texture_u) > 0)  # texture runs left to right


def test_cast_rays_through_an_opening():
    layout = closed_east_layout()
    camera = small_camera(30.0)
    hits = cast_rays(layout.cell_walls, 0.5, 0.5, *ray_directions(camera, math.pi / 2))
    # Looking south through the opening to the border y = 2, seen from cell (1, 0).
    assert np.allclose(hits.distance, 1.5)
    assert hits.horizontal.all()
    assert (hits.cell == 2).all()


def test_shade_walls_wall_height_and_backdrop():
    layout = closed_east_layout()
    camera = Camera(128, 64, math.radians(30.0), physics.MAX_PITCH)  # tall, narrow view
    palette = build_palette(camera, 4)
    hits = cast_rays(layout.cell_walls, 0.5, 0.5, *ray_directions(camera, math.pi / 2))
    frame = shade_walls(camera, hits, np.zeros(4, dtype=np.int64), palette, 0)
    assert frame.shape == (128, 64, 3) and frame.dtype == np.uint8
    half = 0.5 * camera.focal / 1.5  # the wall spans rows 64 +- half (about 40)
    first_wall_row = int(math.ceil(64 - half - 0.5))
    last_wall_row = int(math.ceil(64 + half - 0.5)) - 1
    assert np.array_equal(frame[0, 10], camera.backdrop[camera.max_shift])  # ceiling
    assert np.array_equal(frame[127, 10], camera.backdrop[camera.max_shift + 127])  # floor
    assert np.array_equal(
        frame[first_wall_row - 1, 10], camera.backdrop[camera.max_shift + first_wall_row - 1]
    )
    assert np.array_equal(
        frame[last_wall_row + 1, 10], camera.backdrop[camera.max_shift + last_wall_row + 1]
    )
    texels = {tuple(row) for row in wall_table(4)}
    backdrop = {tuple(row) for row in camera.backdrop}
    for row in (first_wall_row, 64, last_wall_row):
        assert tuple(frame[row, 10]) in texels - backdrop
    # Looking up (horizon 5 rows lower) moves the whole picture down by 5 rows.
    shifted = shade_walls(camera, hits, np.zeros(4, dtype=np.int64), palette, 5)
    assert np.array_equal(shifted[5:], frame[:-5])


def test_draw_pillar_respects_depth_buffer():
    camera = small_camera()
    frame = np.zeros((64, 64, 3), dtype=np.uint8)
    far_wall = np.full(64, 5.0)
    draw_pillar(frame, camera, far_wall, (0.5, 0.5, 0.0), (2.5, 0.5), 0)
    assert frame[32, 32, 0] > 150 and frame[32, 32, 1] < 60  # red, centred
    assert frame[32, 0].sum() == 0  # narrow: not at the edge
    hidden = np.zeros((64, 64, 3), dtype=np.uint8)
    draw_pillar(hidden, camera, np.full(64, 1.0), (0.5, 0.5, 0.0), (2.5, 0.5), 0)
    assert hidden.sum() == 0
    behind = np.zeros((64, 64, 3), dtype=np.uint8)
    draw_pillar(behind, camera, far_wall, (0.5, 0.5, math.pi), (2.5, 0.5), 0)
    assert behind.sum() == 0


# ---- textures ------------------------------------------------------------------------
def test_textures():
    assert fog_factor(0.0) == pytest.approx(1.0)
    assert fog_factor(2.0) == pytest.approx(1 / 1.3)
    assert np.all(np.diff(fog_factor(np.arange(20.0))) <= 0)
    assert hue_stride(9) == 4 and hue_stride(4) == 1
    colors = region_colors(9)
    assert len(np.unique(np.round(colors, 3), axis=0)) == 9
    red = np.array(GOAL_RGB) / 255.0
    assert np.abs(colors - red).sum(axis=1).min() > 0.3  # no wall looks like the goal
    assert wall_table(9).shape == (9 * 2 * 32 * 16 * 16, 3)
